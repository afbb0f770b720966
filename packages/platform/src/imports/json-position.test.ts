import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { firstInvalidOffset, jsonSyntaxProblem } from './json-position.js'

/** Where a line stops being JSON: JSON.parse's position when it gives one, else the scanner's. */

function problemOf(text: string) {
  try {
    JSON.parse(text)
  } catch (error) {
    return jsonSyntaxProblem(text, error)
  }
  throw new Error(`${text} is JSON`)
}

/** JSON.parse's own position, where its message gives one. */
function v8Offset(text: string): number | undefined {
  try {
    JSON.parse(text)
  } catch (error) {
    const match = / at position (\d+)/.exec((error as Error).message)
    return match ? Number(match[1]) : undefined
  }
  return undefined
}

const INVALID = [
  '{oops',
  '{"a":1,}',
  '{"a":1',
  '[1,2',
  '{"a": tru}',
  'nope',
  '{"a":1} x',
  '"abc',
  '{"a":"\u0001"}',
  '{"é":1, x}',
  '{"a":1}}',
  '{"a":01}',
  '{"a":1.}',
  '{"a":1e}',
  '{"a":-}',
  '{"a":"\\x"}',
  '{"a":"\\u12g4"}',
  '{"a" 1}',
  '{"a":[1,,2]}',
  '{"a":{"b":[true,fals]}}',
  '[]]',
  '',
  '   ',
  "{'a':1}",
  '{"a":NaN}',
  '{"a":+1}',
  '[1 2]',
  '{"a":1,"b"}',
]

describe('the position of a JSON syntax error', { timeout: 10_000 }, () => {
  test('the scanner agrees with JSON.parse wherever JSON.parse gives a position', () => {
    for (const text of INVALID) {
      const given = v8Offset(text)
      if (given !== undefined) assert.equal(firstInvalidOffset(text), given, text)
    }
  })

  test('an unexpected character JSON.parse does not place is found by the scanner', () => {
    assert.deepEqual(problemOf('{"a": tru}'), { column: 10, reason: "unexpected token '}'" })
    assert.deepEqual(problemOf('nope'), { column: 2, reason: "unexpected token 'o'" })
    assert.deepEqual(problemOf('{"a":NaN}'), { column: 6, reason: "unexpected token 'N'" })
    assert.deepEqual(problemOf('[1,,2]'), { column: 4, reason: "unexpected token ','" })
  })

  test('the column counts characters from 1; the reason is the parser’s, without the line’s text', () => {
    assert.deepEqual(problemOf('{oops'), { column: 2, reason: "expected property name or '}'" })
    assert.deepEqual(problemOf('{"🎧": 1, x}'), {
      column: 10,
      reason: 'expected double-quoted property name',
    })
    assert.deepEqual(problemOf('{"a":1'), { column: 7, reason: 'the JSON ends early' })
    assert.deepEqual(problemOf('"abc'), { column: 5, reason: 'the JSON ends early' })
    assert.deepEqual(problemOf('{"a":1} x'), {
      column: 9,
      reason: 'unexpected non-whitespace character after JSON',
    })
    assert.deepEqual(problemOf(''), { column: 1, reason: 'the JSON ends early' })
    const long = `{"title":"${'x'.repeat(500)}", oops}`
    const { reason } = problemOf(long)
    assert.ok(!reason.includes('xxxx'), reason)
  })

  test('deep nesting is scanned without recursion', () => {
    const deep = `${'['.repeat(100_000)}x`
    assert.equal(firstInvalidOffset(deep), 100_000)
    assert.equal(firstInvalidOffset(`${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`), 300_001)
  })
})
