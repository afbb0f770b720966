import assert from 'node:assert/strict'
import { test } from 'node:test'
import { describeCheckReport } from './receiver-check-report.js'

const item = (id: string, severity: 'failure' | 'warning', passed: boolean) => ({
  id,
  severity,
  passed,
  expected: `${id} expected`,
  evidence: `${id} evidence`,
})

test('a report reads as each item with its verdict, then the verdict of the check', {
  timeout: 5_000,
}, () => {
  const url = 'https://partner.example/push'
  const items = [
    item('valid-push', 'failure', true),
    item('unknown-fields', 'warning', false),
    item('callbacks', 'failure', false),
  ]
  assert.deepEqual(describeCheckReport({ url, keyVersion: 2, passed: false, items }), [
    'PASS  valid-push: valid-push expected',
    '      valid-push evidence',
    'WARN  unknown-fields: unknown-fields expected',
    '      unknown-fields evidence',
    'FAIL  callbacks: callbacks expected',
    '      callbacks evidence',
    '',
    `The receiver at ${url} failed 1 of the check's items: callbacks.`,
  ])
  assert.equal(
    describeCheckReport({ url, keyVersion: 2, passed: true, items: [] }).at(-1),
    `The receiver at ${url} passed the check (key version 2).`,
  )
})
