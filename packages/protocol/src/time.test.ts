import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ISO_INSTANT_PATTERN, MAX_FRACTION_DIGITS, parseInstant, parseInstantMicros } from './time.js'

const BASE_MS = Date.parse('2026-03-01T10:00:00Z')
const BASE_US = BigInt(BASE_MS) * 1000n

describe('parseInstantMicros', { timeout: 10_000 }, () => {
  test('keeps every one of up to 6 fractional digits', () => {
    assert.equal(MAX_FRACTION_DIGITS, 6)
    assert.equal(parseInstantMicros('2026-03-01T10:00:00Z'), BASE_US)
    assert.equal(parseInstantMicros('2026-03-01T10:00Z'), BASE_US)
    assert.equal(parseInstantMicros('2026-03-01T10:00:00.1Z'), BASE_US + 100_000n)
    assert.equal(parseInstantMicros('2026-03-01T10:00:00.000001Z'), BASE_US + 1n)
    assert.equal(parseInstantMicros('2026-03-01T10:00:00.999999Z'), BASE_US + 999_999n)
    assert.equal(parseInstantMicros('2026-03-01T18:00:00.000001+08:00'), BASE_US + 1n)
    assert.equal(parseInstantMicros('2026-03-01T05:30:00.5-04:30'), BASE_US + 500_000n)
  })

  test('7 or more fractional digits are refused, not rounded', () => {
    for (const text of [
      '2026-03-01T10:00:00.0000008Z',
      '2026-03-01T10:00:00.1234567Z',
      '2026-03-01T09:59:59.999999999+00:00',
      `2026-03-01T10:00:00.${'0'.repeat(20)}Z`,
    ]) {
      assert.equal(parseInstantMicros(text), undefined, text)
      assert.equal(parseInstant(text), undefined, text)
      assert.equal(new RegExp(ISO_INSTANT_PATTERN).test(text), false, text)
    }
  })

  test('exact past 2^53 microseconds, and before 1970', () => {
    assert.equal(parseInstantMicros('9999-12-31T23:59:59.999999Z'), 253_402_300_799_999_999n)
    assert.equal(parseInstantMicros('0001-01-01T00:00:00.000001Z'), -62_135_596_799_999_999n)
    assert.equal(parseInstantMicros('1969-12-31T23:59:59.999999Z'), -1n)
  })

  test('dates that do not exist and forms without an offset are refused', () => {
    for (const text of [
      '2026-02-30T00:00:00Z',
      '2026-03-01T24:00:00Z',
      '2026-03-01T10:00:00',
      '2026-03-01T10:00:00.123456',
      '0000-01-01T00:00:00Z',
      '2026-03-01T10:00:00+16:00',
      '2026-03-01T10:00:00.Z',
    ]) {
      assert.equal(parseInstantMicros(text), undefined, text)
    }
  })
})

describe('parseInstant', { timeout: 10_000 }, () => {
  test('is epoch milliseconds rounded down', () => {
    assert.equal(parseInstant('2026-03-01T10:00:00.000999Z'), BASE_MS)
    assert.equal(parseInstant('2026-03-01T10:00:00.001Z'), BASE_MS + 1)
    assert.equal(parseInstant('1969-12-31T23:59:59.999999Z'), -1)
    assert.equal(parseInstant('1969-12-31T23:59:59.9995Z'), -1)
  })
})
