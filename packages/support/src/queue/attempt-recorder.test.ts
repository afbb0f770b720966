import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Database } from '../storage/database.js'
import { AttemptRecorder } from './attempt-recorder.js'
import type { JobQueue, Settlement } from './job-queue.js'

const settlement: Settlement<'done', number> = {
  id: 1,
  fence: { claimant: 'a', claimNo: 1 },
  next: { state: 'done' },
  attempt: { outcome: 'succeeded', startedAt: 0, durationMs: 1 },
}

/** A queue whose batch writes fail with the codes given, in turn, then succeed. */
function failingQueue(codes: string[]) {
  const writes: number[] = []
  const queue = {
    async settle(_db: Database, settlements: readonly Settlement<'done', number>[]) {
      writes.push(settlements.length)
      const code = codes.shift()
      if (code !== undefined) throw Object.assign(new Error(code), { code })
      return { moved: settlements.length, stale: 0 }
    },
  } as unknown as JobQueue<'done', number, unknown>
  return { queue, writes }
}

describe('attempt recorder', { timeout: 10_000 }, () => {
  test('a batch cancelled to break a deadlock or a serialization failure is written again', async () => {
    const { queue, writes } = failingQueue(['40P01', '40001'])
    const errors: unknown[] = []
    const recorder = new AttemptRecorder({} as Database, queue, 0, {
      warn() {},
      error: (details: unknown) => errors.push(details),
    })
    await recorder.record(settlement)
    assert.deepEqual(writes, [1, 1, 1])
    assert.deepEqual(errors, [])
  })

  test('any other failure is logged, not retried', async () => {
    const { queue, writes } = failingQueue(['23505'])
    const errors: unknown[] = []
    const recorder = new AttemptRecorder({} as Database, queue, 0, {
      warn() {},
      error: (details: unknown) => errors.push(details),
    })
    await recorder.record(settlement)
    assert.deepEqual(writes, [1])
    assert.equal(errors.length, 1)
  })
})
