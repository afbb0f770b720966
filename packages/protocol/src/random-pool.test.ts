import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { pooledRandomBytes, randomBytes } from './random-pool.js'

/** A source whose every byte says which draw and position it came from. */
function countingSource() {
  const draws: number[] = []
  let next = 0
  const source = (size: number) => {
    draws.push(size)
    return Buffer.from(Array.from({ length: size }, () => next++ % 256))
  }
  return { source, draws }
}

describe('pooledRandomBytes', { timeout: 10_000 }, () => {
  test('hands out each drawn byte once, in order, drawing a pool only when the last is spent', () => {
    const { source, draws } = countingSource()
    const random = pooledRandomBytes(source)
    const handed = Array.from({ length: 400 }, () => random(12))
    assert.deepEqual(draws, [4096, 4096])
    const bytes = Buffer.concat(handed)
    // 341 nonces of 12 bytes fit a pool of 4096; the 342nd starts the next pool.
    assert.deepEqual(
      bytes.subarray(0, 341 * 12),
      Buffer.from(Array.from({ length: 341 * 12 }, (_, i) => i % 256)),
    )
    assert.equal(bytes[341 * 12], 4096 % 256)
    for (const piece of handed) assert.equal(piece.length, 12)
  })

  test('a request larger than the pool is drawn directly', () => {
    const { source, draws } = countingSource()
    const random = pooledRandomBytes(source)
    assert.equal(random(5000).length, 5000)
    assert.deepEqual(draws, [5000])
  })

  test("the process's pool gives distinct nonces", () => {
    const seen = new Set(Array.from({ length: 10_000 }, () => randomBytes(12).toString('hex')))
    assert.equal(seen.size, 10_000)
  })
})
