import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { batcher } from './batcher.js'

describe('batcher', { timeout: 10_000 }, () => {
  test('calls made in one turn of the event loop share one batch, answered in order', async () => {
    const batches: number[][] = []
    const double = batcher(async (items: number[]) => {
      batches.push(items)
      return items.map((item) => item * 2)
    })
    assert.deepEqual(await Promise.all([double(1), double(2), double(3)]), [2, 4, 6])
    assert.deepEqual(batches, [[1, 2, 3]])
  })

  test('calls made while a batch runs wait for it, then go together; maxBatch splits them', async () => {
    const batches: string[][] = []
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const echo = batcher(
      async (items: string[]) => {
        batches.push(items)
        if (batches.length === 1) await gate
        return items
      },
      { maxBatch: 2 },
    )
    const first = echo('a')
    // The first batch has started (setImmediate) and is held at the gate.
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(batches, [['a']])
    const later = ['b', 'c', 'd'].map((item) => echo(item))
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(batches.length, 1, 'no second batch while the first runs (parallel 1)')
    release()
    assert.deepEqual(await Promise.all([first, ...later]), ['a', 'b', 'c', 'd'])
    assert.deepEqual(batches, [['a'], ['b', 'c'], ['d']])
  })

  test('a failed batch fails each of its callers, and the next batch runs', async () => {
    let calls = 0
    const flaky = batcher(async (items: number[]) => {
      if (++calls === 1) throw new Error('down')
      return items
    })
    const failed = await Promise.allSettled([flaky(1), flaky(2)])
    assert.deepEqual(
      failed.map((outcome) => outcome.status),
      ['rejected', 'rejected'],
    )
    assert.equal(await flaky(3), 3)
  })

  test('parallel batches: up to `parallel` run at once', async () => {
    let running = 0
    let most = 0
    const gates: (() => void)[] = []
    const slow = batcher(
      async (items: number[]) => {
        running++
        most = Math.max(most, running)
        await new Promise<void>((resolve) => gates.push(resolve))
        running--
        return items
      },
      { parallel: 2, maxBatch: 1 },
    )
    let settled = false
    const all = Promise.all([slow(1), slow(2), slow(3)]).finally(() => {
      settled = true
    })
    while (gates.length < 2) await new Promise((resolve) => setImmediate(resolve))
    assert.equal(running, 2)
    while (!settled) {
      gates.shift()?.()
      await new Promise((resolve) => setImmediate(resolve))
    }
    assert.deepEqual(await all, [1, 2, 3])
    assert.equal(most, 2)
  })
})
