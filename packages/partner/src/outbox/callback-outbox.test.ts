import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { type ScratchDatabase, scratchPostgresDatabase } from '@earshot/platform/test-support/backends'
import { eventually } from '@earshot/platform/test-support/push-receiver'
import { EarshotApiError, EarshotConfigError, EarshotNetworkError } from '../client/errors.js'
import { silentLogger } from '../receiver/logger.js'
import { type Database, openDatabase } from '../storage/database.js'
import { type CallbackOutbox, type CallbackOutboxOptions, openCallbackOutbox } from './callback-outbox.js'

const fast = { retrySchedule: [20, 40], pollIntervalMs: 50, logger: silentLogger }

let counter = 0
const event = (audioId = `audio-${++counter}`) => ({
  eventId: `evt-${++counter}`,
  eventType: 'recording.audio_ready',
  audioId,
})

/** Waits until the callback for the recording is confirmed. */
const untilConfirmed = (outbox: CallbackOutbox, audioId: string, what: string) =>
  eventually(async () => (await outbox.callbacks({ audioId, state: 'confirmed' })).length > 0, 10_000, what)

/** PGlite always; PostgreSQL too when DATABASE_URL names a server (as the platform's suites do). */
const backends = ['pglite', ...(process.env.DATABASE_URL ? ['postgres' as const] : [])] as const

for (const backend of backends)
  describe(`callback outbox on ${backend}`, () => {
    // One database for the suite (a PGlite takes seconds to start); each test empties it and closes its
    // outbox at the end, so no outbox sends another test's callbacks.
    let scratch: ScratchDatabase | undefined
    let shared: Database | undefined
    let current: CallbackOutbox | undefined
    const openShared = async () => {
      if (backend === 'pglite') return openDatabase({})
      scratch ??= await scratchPostgresDatabase()
      return openDatabase({ databaseUrl: scratch.url })
    }
    const openOutbox = async (options: CallbackOutboxOptions) => {
      shared ??= await openShared()
      await current?.close()
      await shared
        .query('TRUNCATE earshot_receipt_callbacks, earshot_received_events, earshot_seen_nonces')
        .catch(() => {}) // before the first outbox made the tables
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

    test('records an event and its callback once; sends it after wake(eventId), not before', async () => {
      const sent: string[] = []
      const outbox = await openOutbox({
        confirm: async (audioId) => {
          sent.push(audioId)
        },
      })
      const first = event()
      assert.equal(await outbox.recordReceived(first), true)
      assert.equal(await outbox.recordReceived(first), false)
      const [callback] = await outbox.callbacks()
      assert.equal(callback?.state, 'pending')
      assert.equal(callback?.eventType, 'recording.audio_ready')
      assert.equal(callback?.attempts, 0)

      await sleep(200) // several polls: the answer grace holds it
      assert.deepEqual(sent, [])
      outbox.wake(first.eventId)
      await eventually(
        async () => (await outbox.callbacks({ state: 'confirmed' })).length === 1,
        10_000,
        'confirmed',
      )
      assert.deepEqual(sent, [first.audioId])
      const [done] = await outbox.callbacks()
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

    test('a refusal that cannot succeed is recorded as failed with its error; 4010/4011/4290/5030 are retried', async () => {
      const tries = new Map<string, number>()
      const refusals: Record<string, number> = { a404: 4040, a401: 4010, a429: 4290, a503: 5030, a4012: 4012 }
      const outbox = await openOutbox({
        confirm: async (audioId) => {
          const n = (tries.get(audioId) ?? 0) + 1
          tries.set(audioId, n)
          const code = refusals[audioId] as number
          if (code === 4040 || code === 4012 || n === 1) {
            throw new EarshotApiError({
              code,
              msg: `refused with ${code}`,
              requestId: 'r',
              httpStatus: code / 10,
            })
          }
        },
      })
      for (const audioId of Object.keys(refusals)) {
        const e = event(audioId)
        await outbox.recordReceived(e)
        outbox.wake(e.eventId)
      }
      await eventually(
        async () =>
          (await outbox.callbacks()).filter((c) => c.audioId in refusals && c.state !== 'pending').length ===
          5,
        10_000,
        'all settled',
      )
      const byAudio = new Map((await outbox.callbacks()).map((c) => [c.audioId, c]))
      for (const audioId of ['a404', 'a4012']) {
        const callback = byAudio.get(audioId)
        assert.equal(callback?.state, 'failed', audioId)
        assert.equal(callback?.attempts, 1)
        assert.match(callback?.lastError ?? '', /refused with 40/)
        assert.ok(callback?.doneAt)
      }
      for (const audioId of ['a401', 'a429', 'a503']) {
        assert.equal(byAudio.get(audioId)?.state, 'confirmed', audioId)
        assert.equal(byAudio.get(audioId)?.attempts, 2)
      }
      await sleep(150)
      assert.equal(tries.get('a404'), 1, 'not retried')
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

    test('survives a restart: a recorded callback is sent by the next outbox on the same database', async () => {
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
        // Closed before the answer went out, so never attempted; a crash would leave the same rows.
        await first.close()

        const sent: string[] = []
        const second = await openCallbackOutbox({
          ...fast,
          ...where,
          confirm: async (audioId) => void sent.push(audioId),
        })
        try {
          await eventually(
            async () => (await second.callbacks({ state: 'confirmed' })).length === 1,
            10_000,
            'sent after restart',
          )
          assert.deepEqual(sent, [e.audioId])
        } finally {
          await second.close()
        }
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    test('close() waits briefly for callbacks in flight, then leaves them pending', async () => {
      const outbox = await openOutbox({
        closeTimeoutMs: 100,
        confirm: () => new Promise(() => {}),
      })
      const e = event()
      await outbox.recordReceived(e)
      outbox.wake(e.eventId)
      await sleep(50)
      const started = performance.now()
      await outbox.close()
      assert.ok(performance.now() - started < 1000)
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
