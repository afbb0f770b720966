import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, describe, test } from 'node:test'
import { isIllegalTransition } from '@earshot/support/queue'
import { type ScratchDatabase, scratchPostgresDatabase } from '@earshot/test-kit/backends'
import { eventually } from '@earshot/test-kit/eventually'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { EarshotApiError, EarshotConfigError, EarshotNetworkError } from '../client/errors.js'
import { silentLogger } from '../logging/receiver-logger.js'
import { type Database, openDatabase } from '../storage/database.js'
import { type CallbackOutbox, type CallbackOutboxOptions, openCallbackOutbox } from './callback-outbox.js'
import { callbackQueue } from './outbox-store.js'

const fast = { retrySchedule: [20, 40], pollIntervalMs: 50, log: silentLogger }

let counter = 0
const event = (audioId = `audio-${++counter}`) => ({
  eventId: `evt-${++counter}`,
  eventType: 'recording.audio_ready',
  audioId,
})

/** Waits until the callback for the recording is confirmed. */
const untilConfirmed = (outbox: CallbackOutbox, audioId: string, what: string) =>
  eventually(async () => (await outbox.callbacks({ audioId, state: 'confirmed' })).length > 0, 10_000, what)

/** A promise and the function that resolves it. */
function gate() {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

/** PGlite always; PostgreSQL too when DATABASE_URL names a server (as the platform's suites do). */
const backends = ['pglite', ...(process.env.DATABASE_URL ? ['postgres' as const] : [])] as const

for (const backend of backends)
  describe(`callback outbox on ${backend}`, { timeout: 120_000 }, () => {
    // One database for the suite (a PGlite takes seconds to start); each test empties it and closes its
    // outbox at the end, so no outbox sends another test's callbacks.
    let scratch: ScratchDatabase | undefined
    let shared: Database | undefined
    let current: CallbackOutbox | undefined
    const openShared = async () => {
      if (backend === 'pglite') return emptyPglite()
      scratch ??= await scratchPostgresDatabase()
      return openDatabase({ databaseUrl: scratch.url })
    }
    const openOutbox = async (options: CallbackOutboxOptions) => {
      shared ??= await openShared()
      await current?.close()
      await shared
        .query('TRUNCATE earshot_receipt_callbacks, earshot_seen_nonces, earshot_receipt_callback_attempts')
        .catch((error: unknown) => {
          // Before the first outbox made the tables there is nothing to empty; anything else is a bug.
          if ((error as { code?: string }).code !== '42P01') throw error
        })
      current = await openCallbackOutbox({ ...fast, ...options, database: shared })
      return current
    }
    afterEach(async () => {
      await current?.close()
      current = undefined
    })
    after(async () => {
      await shared?.close()
      await scratch?.drop()
    })

    /** The attempts recorded for a callback, oldest first. */
    const attemptsOf = (eventId: string) =>
      (shared as Database).query<{
        claim_no: number
        outcome: string
        error: string | null
        stale: boolean
      }>(
        `SELECT claim_no, outcome, error, stale FROM earshot_receipt_callback_attempts
          WHERE event_id = $1 ORDER BY attempt_id`,
        [eventId],
      )
    /** The callback's row as stored: its state in the queue, its fence, whether it is due. */
    const rowOf = async (eventId: string) => {
      const [row] = await (shared as Database).query<{
        state: string
        claim_no: number
        claimed_by: string | null
        due: boolean | null
      }>(
        `SELECT state, claim_no, claimed_by, due_at <= now() AS due FROM earshot_receipt_callbacks
          WHERE event_id = $1`,
        [eventId],
      )
      return row
    }

    test('records an event and its callback once; sends it after wake(eventId), not before', async () => {
      const sent: string[] = []
      let failedOnce = false
      const outbox = await openOutbox({
        confirm: async (audioId) => {
          if (audioId === other.audioId && !failedOnce) {
            failedOnce = true
            throw new EarshotNetworkError('first try fails')
          }
          sent.push(audioId)
        },
      })
      const other = event()
      const first = event()
      assert.equal(await outbox.recordReceived(first), true)
      assert.equal(await outbox.recordReceived(first), false)
      const [callback] = await outbox.callbacks()
      assert.equal(callback?.state, 'pending')
      assert.equal(callback?.eventType, 'recording.audio_ready')
      assert.equal(callback?.attempts, 0)

      // Another callback fails once, so its retry is claimed from the queue: the held one is not due.
      await outbox.recordReceived(other)
      outbox.wake(other.eventId)
      await untilConfirmed(outbox, other.audioId, 'the other callback confirmed on its retry')
      assert.deepEqual(sent, [other.audioId])
      outbox.wake(first.eventId)
      await untilConfirmed(outbox, first.audioId, 'confirmed')
      assert.deepEqual(sent, [other.audioId, first.audioId])
      const [done] = await outbox.callbacks({ audioId: first.audioId })
      assert.equal(done?.attempts, 1)
      assert.equal(done?.nextAttemptAt, null)
      assert.ok(done?.doneAt instanceof Date)
    })

    test('admit: a nonce is refused the second time; a known eventId is a duplicate and re-arms its callback', async () => {
      const sent: string[] = []
      const outbox = await openOutbox({ confirm: async (audioId) => void sent.push(audioId) })
      const e = event()
      assert.equal(await outbox.admit({ keyVersion: 1, nonce: 'n-1', eventId: e.eventId }), 'new')
      assert.equal(await outbox.admit({ keyVersion: 1, nonce: 'n-1', eventId: e.eventId }), 'replayed')
      assert.equal(await outbox.admit({ keyVersion: 2, nonce: 'n-1', eventId: e.eventId }), 'new')
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await untilConfirmed(outbox, e.audioId, 'sent')

      // The platform pushes the event again (an operator's replay): its callback goes out again.
      assert.equal(await outbox.admit({ keyVersion: 1, nonce: 'n-2', eventId: e.eventId }), 'duplicate')
      assert.equal((await outbox.callbacks({ audioId: e.audioId }))[0]?.state, 'pending')
      outbox.wake(e.eventId)
      await untilConfirmed(outbox, e.audioId, 'resent')
      assert.deepEqual(sent, [e.audioId, e.audioId])

      // The same nonce twice in one batch: the later is the replay.
      const both = await Promise.all([
        outbox.admit({ keyVersion: 1, nonce: 'n-3', eventId: 'x' }),
        outbox.admit({ keyVersion: 1, nonce: 'n-3', eventId: 'x' }),
      ])
      assert.deepEqual(both, ['new', 'replayed'])
    })

    test('a nonce past the replay window is accepted again', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z')
      const outbox = await openOutbox({ confirm: async () => {}, clock: () => now, replayWindowMs: 1000 })
      assert.equal(await outbox.admit({ keyVersion: 1, nonce: 'old', eventId: 'e' }), 'new')
      now += 999
      assert.equal(await outbox.admit({ keyVersion: 1, nonce: 'old', eventId: 'e' }), 'replayed')
      now += 2
      assert.equal(await outbox.admit({ keyVersion: 1, nonce: 'old', eventId: 'e' }), 'new')
    })

    test('retries a failing callback on the schedule until it succeeds', async () => {
      const calls: number[] = []
      const outbox = await openOutbox({
        retrySchedule: [30, 60],
        confirm: async () => {
          calls.push(performance.now())
          if (calls.length <= 3) throw new EarshotNetworkError('platform down')
        },
      })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      const [done] = await eventually(
        async () => {
          const rows = await outbox.callbacks({ audioId: e.audioId, state: 'confirmed' })
          return rows.length > 0 && rows
        },
        10_000,
        'confirmed',
      )
      assert.equal(done?.attempts, 4)
      assert.equal(done?.lastError, null)
      assert.equal(calls.length, 4)
      const gaps = calls.slice(1).map((at, i) => at - (calls[i] as number))
      // 30 ms, then 60 ms, then 60 ms again (the last delay repeats), each ±10%.
      assert.ok((gaps[0] as number) >= 26, `gaps ${gaps}`)
      assert.ok((gaps[1] as number) >= 53, `gaps ${gaps}`)
      assert.ok((gaps[2] as number) >= 53, `gaps ${gaps}`)
    })

    test('a refusal that cannot succeed is recorded as failed with its error; 4010/4012/4030/4290/5030 are retried', async () => {
      const tries = new Map<string, number>()
      const refusals: Record<string, number> = {
        a404: 4040,
        a4001: 4001,
        a401: 4010,
        a429: 4290,
        a503: 5030,
        // Put right by the operator (the enterprise enabled again) or the partner (its new secret).
        a4012: 4012,
        a4030: 4030,
      }
      const outbox = await openOutbox({
        confirm: async (audioId) => {
          const n = (tries.get(audioId) ?? 0) + 1
          tries.set(audioId, n)
          const code = refusals[audioId] as number
          if (code === 4040 || code === 4001 || n === 1) {
            throw new EarshotApiError({
              code,
              msg: `refused with ${code}`,
              requestId: 'r',
              httpStatus: Math.floor(code / 10),
            })
          }
        },
      })
      for (const audioId of Object.keys(refusals)) {
        const e = event(audioId)
        await outbox.recordReceived(e)
        outbox.wake(e.eventId)
      }
      const settled = Object.keys(refusals).length
      await eventually(
        async () =>
          (await outbox.callbacks()).filter((c) => c.audioId in refusals && c.state !== 'pending').length ===
          settled,
        10_000,
        'all settled',
      )
      const byAudio = new Map((await outbox.callbacks()).map((c) => [c.audioId, c]))
      for (const audioId of ['a404', 'a4001']) {
        const callback = byAudio.get(audioId)
        assert.equal(callback?.state, 'failed', audioId)
        assert.equal(callback?.attempts, 1)
        assert.match(callback?.lastError ?? '', /refused with 40/)
        assert.ok(callback?.doneAt)
        assert.equal(callback?.nextAttemptAt, null, 'failed is final: never due again')
      }
      for (const audioId of ['a401', 'a429', 'a503', 'a4012', 'a4030']) {
        assert.equal(byAudio.get(audioId)?.state, 'confirmed', audioId)
        assert.equal(byAudio.get(audioId)?.attempts, 2)
      }
      assert.equal(tries.get('a404'), 1, 'not retried')
    })

    test('a receipt and an erasure confirmation of one recording are two callbacks, each sent with its erased', async () => {
      const sent: string[] = []
      const outbox = await openOutbox({
        confirm: async (audioId, { erased }) => void sent.push(`${audioId} erased=${erased}`),
      })
      const receipt = event('kept-apart')
      const erasure = { ...event('kept-apart'), eventType: 'recording.deleted', erased: true }
      await outbox.recordReceived(receipt)
      await outbox.recordReceived(erasure)
      outbox.wake(receipt.eventId)
      outbox.wake(erasure.eventId)
      await eventually(
        async () => (await outbox.callbacks({ audioId: 'kept-apart', state: 'confirmed' })).length === 2,
        10_000,
        'both confirmed',
      )
      assert.deepEqual(sent.sort(), ['kept-apart erased=false', 'kept-apart erased=true'])
      const erasedOf = new Map((await outbox.callbacks()).map((c) => [c.eventId, c.erased]))
      assert.deepEqual([erasedOf.get(receipt.eventId), erasedOf.get(erasure.eventId)], [false, true])
    })

    test('an erasure confirmation refused with 4040 (never had it) or 4001 (not deleted) is final', async () => {
      const tries: string[] = []
      const outbox = await openOutbox({
        confirm: async (audioId) => {
          tries.push(audioId)
          const code = audioId === 'never-had' ? 4040 : 4001
          throw new EarshotApiError({
            code,
            msg: `refused with ${code}`,
            requestId: 'r',
            httpStatus: code / 10,
          })
        },
      })
      for (const audioId of ['never-had', 'not-deleted']) {
        const e = { ...event(audioId), eventType: 'recording.deleted', erased: true }
        await outbox.recordReceived(e)
        outbox.wake(e.eventId)
      }
      await eventually(
        async () => (await outbox.callbacks({ state: 'failed' })).length === 2,
        10_000,
        'both failed for good',
      )
      assert.deepEqual(tries.sort(), ['never-had', 'not-deleted'])
    })

    test('an attempt that hangs is abandoned after attemptTimeoutMs and retried', async () => {
      let n = 0
      const outbox = await openOutbox({
        attemptTimeoutMs: 100,
        confirm: (_audioId, { signal }) => {
          n++
          // The first attempt ignores its signal and never settles.
          return n === 1
            ? new Promise(() => {})
            : signal.aborted
              ? Promise.reject(signal.reason)
              : Promise.resolve()
        },
      })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await untilConfirmed(outbox, e.audioId, 'confirmed')
      assert.equal(n, 2)
    })

    test('survives a restart: a recorded callback (an erasure confirmation too) is sent by the next outbox on the same database', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'earshot-outbox-'))
      // PGlite: a data directory on disk, opened again. PostgreSQL: the same database, whose held callback
      // falls due once its answer grace and attempt timeout have passed (short here).
      const where =
        backend === 'pglite'
          ? { dataDir: join(dir, 'db') }
          : { databaseUrl: (scratch as ScratchDatabase).url, answerGraceMs: 50, attemptTimeoutMs: 100 }
      try {
        await openOutbox({ confirm: async () => {} }) // empties the shared tables
        await current?.close()
        const first = await openCallbackOutbox({
          ...fast,
          ...where,
          confirm: async () => {
            throw new EarshotNetworkError('platform down')
          },
        })
        const e = event()
        await first.recordReceived(e)
        const erasure = { ...event(), eventType: 'recording.deleted', erased: true }
        await first.recordReceived(erasure)
        // Closed before the answer went out, so never attempted; a crash would leave the same rows.
        await first.close()

        const sent: string[] = []
        const second = await openCallbackOutbox({
          ...fast,
          ...where,
          confirm: async (audioId, { erased }) => void sent.push(erased ? `${audioId} erased` : audioId),
        })
        try {
          await eventually(
            async () => (await second.callbacks({ state: 'confirmed' })).length === 2,
            10_000,
            'sent after restart',
          )
          assert.deepEqual(sent.sort(), [e.audioId, `${erasure.audioId} erased`].sort())
        } finally {
          await second.close()
        }
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    test('close() lets a callback in flight finish within its grace and records it', async () => {
      const started = gate()
      const answer = gate()
      const outbox = await openOutbox({
        closeTimeoutMs: 60_000,
        confirm: async () => {
          started.open()
          await answer.opened
        },
      })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await started.opened
      const closing = outbox.close()
      answer.open()
      await closing
      current = undefined
      assert.deepEqual(await attemptsOf(e.eventId), [
        { claim_no: 1, outcome: 'succeeded', error: null, stale: false },
      ])
      assert.equal((await rowOf(e.eventId))?.state, 'confirmed')
    })

    test('a result under a claim no longer current is recorded as stale and moves nothing', async () => {
      const started = gate()
      const answer = gate()
      const outbox = await openOutbox({
        confirm: async () => {
          started.open()
          await answer.opened
        },
      })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await started.opened
      // While the platform answers, the claim's lease ends and another receiver claims the callback.
      const db = shared as Database
      const [taken] = await db.transaction(async (tx) => {
        await tx.query(
          `UPDATE earshot_receipt_callbacks SET due_at = now() - interval '1 second' WHERE event_id = $1`,
          [e.eventId],
        )
        await callbackQueue.sweep(tx, 100)
        return callbackQueue.claim(tx, { claimant: 'other', limit: 1, leaseSeconds: 30, ids: [e.eventId] })
      })
      assert.ok(taken)
      assert.deepEqual(taken.fence, { claimant: 'other', claimNo: 2 })
      answer.open()
      await eventually(async () => (await attemptsOf(e.eventId)).length === 1, 10_000, 'the late result')
      assert.deepEqual(await attemptsOf(e.eventId), [
        { claim_no: 1, outcome: 'succeeded', error: null, stale: true },
      ])
      assert.deepEqual(await rowOf(e.eventId), {
        state: 'in_flight',
        claim_no: 2,
        claimed_by: 'other',
        due: false,
      })
      // The current claim's result moves it.
      const now = { startedAt: Date.now(), durationMs: 1 }
      assert.equal(await callbackQueue.complete(db, taken, { state: 'confirmed' }, now), true)
      const [callback] = await outbox.callbacks({ audioId: e.audioId })
      assert.equal(callback?.state, 'confirmed')
      assert.equal(callback?.attempts, 1) // the attempts that moved it; the log keeps both
      assert.deepEqual(
        (await attemptsOf(e.eventId)).map((a) => [a.claim_no, a.stale]),
        [
          [1, true],
          [2, false],
        ],
      )
    })

    test('a confirm that throws synchronously or rejects is a failed attempt with its error, then retried', async () => {
      const unhandled: unknown[] = []
      const onUnhandled = (reason: unknown) => unhandled.push(reason)
      process.on('unhandledRejection', onUnhandled)
      try {
        const tries = new Map<string, number>()
        const outbox = await openOutbox({
          confirm: (audioId) => {
            const n = (tries.get(audioId) ?? 0) + 1
            tries.set(audioId, n)
            if (n > 1) return Promise.resolve()
            if (audioId.startsWith('sync')) throw new Error('thrown before any promise')
            if (audioId.startsWith('reject')) return Promise.reject(new EarshotNetworkError('platform down'))
            return Promise.reject('not even an Error')
          },
        })
        const events = ['sync', 'reject', 'string'].map((kind) => event(`${kind}-${++counter}`))
        for (const e of events) {
          await outbox.recordReceived(e)
          outbox.wake(e.eventId)
        }
        await eventually(
          async () => (await outbox.callbacks({ state: 'confirmed' })).length === 3,
          10_000,
          'all three confirmed on their retry',
        )
        const attempts = await Promise.all(
          events.map(async (e) => (await attemptsOf(e.eventId)).map((a) => [a.outcome, a.error, a.stale])),
        )
        assert.deepEqual(attempts, [
          [
            ['failed', 'thrown before any promise', false],
            ['succeeded', null, false],
          ],
          [
            ['failed', 'platform down', false],
            ['succeeded', null, false],
          ],
          [
            ['failed', 'not even an Error', false],
            ['succeeded', null, false],
          ],
        ])
        for (const callback of await outbox.callbacks()) {
          assert.equal(callback.attempts, 2)
          assert.equal(callback.lastError, null)
        }
        assert.deepEqual(unhandled, [])
      } finally {
        process.off('unhandledRejection', onUnhandled)
      }
    })

    test('the trigger refuses a change of state the machine does not allow', async () => {
      const outbox = await openOutbox({ confirm: async () => {} })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await untilConfirmed(outbox, e.audioId, 'confirmed')
      const db = shared as Database
      const move = (to: string) =>
        db.query(
          `UPDATE earshot_receipt_callbacks
              SET state = $2, due_at = CASE WHEN $2 IN ('confirmed', 'failed') THEN NULL
                                            ELSE now() + interval '1 hour' END
            WHERE event_id = $1`,
          [e.eventId, to],
        )
      await assert.rejects(move('in_flight'), isIllegalTransition) // confirmed → in_flight: no claim from there
      await assert.rejects(move('failed'), isIllegalTransition)
      await move('pending') // a repeated event's re-arm
      await assert.rejects(move('confirmed'), isIllegalTransition) // pending → confirmed: never attempted
      assert.equal((await rowOf(e.eventId))?.state, 'pending')
    })

    test('close() past its grace aborts the attempt, records it, and hands the callbacks back', async () => {
      const started = gate()
      const outbox = await openOutbox({
        closeTimeoutMs: 50,
        confirm: () => {
          started.open()
          return new Promise(() => {}) // never answered, its signal ignored
        },
      })
      const sent = event()
      const unanswered = event()
      await outbox.recordReceived(sent)
      await outbox.recordReceived(unanswered)
      outbox.wake(sent.eventId)
      await started.opened
      await outbox.close()
      current = undefined
      assert.deepEqual(await attemptsOf(sent.eventId), [
        { claim_no: 1, outcome: 'aborted', error: 'the outbox is closing', stale: true },
      ])
      // Handed back: due now; the one whose answer never went out keeps its hold.
      assert.deepEqual(await rowOf(sent.eventId), {
        state: 'pending',
        claim_no: 1,
        claimed_by: null,
        due: true,
      })
      assert.deepEqual(await rowOf(unanswered.eventId), {
        state: 'pending',
        claim_no: 1,
        claimed_by: null,
        due: false,
      })
      assert.deepEqual(await attemptsOf(unanswered.eventId), [])
    })

    test('a repeat of an event whose callback is being sent has it sent again after its answer', async () => {
      const started = gate()
      const answer = gate()
      const sent: string[] = []
      const outbox = await openOutbox({
        confirm: async (audioId) => {
          sent.push(audioId)
          if (sent.length === 1) {
            started.open()
            await answer.opened
          }
        },
      })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await started.opened
      assert.equal(
        await outbox.admit({ keyVersion: 1, nonce: `again-${e.eventId}`, eventId: e.eventId }),
        'duplicate',
      )
      answer.open()
      // The 2000 of the attempt under way leaves it pending, held for the repeat's answer...
      await eventually(async () => (await rowOf(e.eventId))?.state === 'pending', 10_000, 'pending again')
      assert.equal((await rowOf(e.eventId))?.due, false)
      // ...which went out: sent again at once.
      outbox.wake(e.eventId)
      await untilConfirmed(outbox, e.audioId, 'confirmed again')
      assert.deepEqual(sent, [e.audioId, e.audioId])
      assert.deepEqual(
        (await attemptsOf(e.eventId)).map((a) => [a.claim_no, a.outcome, a.stale]),
        [
          [1, 'succeeded', false],
          [2, 'succeeded', false],
        ],
      )
    })

    test('misconfiguration fails at open', async () => {
      await assert.rejects(openCallbackOutbox({} as CallbackOutboxOptions), EarshotConfigError)
      await assert.rejects(
        openCallbackOutbox({ confirm: async () => {}, retrySchedule: [] }),
        /retrySchedule/,
      )
      await assert.rejects(openCallbackOutbox({ confirm: async () => {}, concurrency: 0 }), /concurrency/)
      await assert.rejects(
        openCallbackOutbox({ confirm: async () => {}, dataDir: '/tmp/x', databaseUrl: 'postgres://x' }),
        /at most one/,
      )
    })
  })
