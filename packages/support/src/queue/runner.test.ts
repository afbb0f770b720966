import assert from 'node:assert/strict'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import { testBackends } from '@earshot/test-kit/backends'
import { eventually, latch } from '@earshot/test-kit/eventually'
import {
  addJobs,
  attemptsOf,
  createJobTables,
  type JobState,
  jobQueue,
  jobRow,
  openTestDatabase,
  type TestDatabase,
  type TestJob,
} from '@earshot/test-kit/queue-fixture'
import type { Database } from '../storage/database.js'
import type { Claim } from './job-queue.js'
import { startRunner } from './runner.js'
import type { Runner, RunnerOptions, WorkResult } from './runner-options.js'

type Options = RunnerOptions<JobState, number, TestJob, WorkResult>

const quiet = { warn() {}, error() {} }

for (const backend of testBackends) {
  describe(`queue runner on ${backend}`, { timeout: 60_000 }, () => {
    let test_: TestDatabase
    let db: Database
    let runner: Runner | undefined
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)

    before(async () => {
      process.on('unhandledRejection', onUnhandled)
      test_ = await openTestDatabase(backend)
      db = test_.db
      await createJobTables(db)
    })
    beforeEach(async () => {
      await db.query('TRUNCATE jobs, job_attempts')
    })
    afterEach(async () => {
      await runner?.stop(0)
      runner = undefined
      assert.deepEqual(unhandled, [], 'no unhandled rejection')
    })
    after(async () => {
      process.off('unhandledRejection', onUnhandled)
      await test_?.close()
    })

    const start = async (options: Partial<Options> & Pick<Options, 'work'>) => {
      runner = await startRunner<JobState, number, TestJob, WorkResult>({
        db,
        queue: jobQueue,
        concurrency: 8,
        leaseSeconds: 30,
        next: (_claim, attempt) =>
          attempt.kind === 'done' && attempt.result.ok ? { state: 'done' } : { state: 'failed' },
        logger: quiet,
        ...options,
      })
      return runner
    }
    const stateOf = async (id: number) => (await jobRow(db, id))?.state
    const allIn = (ids: readonly number[], state: JobState) => async () =>
      (await Promise.all(ids.map(stateOf))).every((s) => s === state)

    test("a work step that throws is a failed attempt with its error, and its group's slot is freed", async () => {
      const ids = await addJobs(db, ['async', 'sync', 'reject', 'fine'], { group: 'one-slot' })
      await start({
        perGroup: 1,
        work(claim) {
          const { payload } = claim.job
          if (payload === 'sync') throw new Error('thrown before any await')
          if (payload === 'reject') return Promise.reject('not even an Error')
          if (payload === 'async')
            return (async () => {
              throw new TypeError('key failed to load')
            })()
          return Promise.resolve({ ok: true, columns: { detail: 'sent' } })
        },
      })
      const [asyncId, syncId, rejectId, fineId] = ids as [number, number, number, number]
      await eventually(allIn([asyncId, syncId, rejectId], 'failed'), 20_000, 'three failed')
      await eventually(allIn([fineId], 'done'), 20_000, 'the fourth done')
      const errors = await Promise.all(
        [asyncId, syncId, rejectId, fineId].map(async (id) =>
          (await attemptsOf(db, id)).map(({ outcome, error, stale, detail }) => ({
            outcome,
            error,
            stale,
            detail,
          })),
        ),
      )
      assert.deepEqual(errors, [
        [{ outcome: 'failed', error: 'key failed to load', stale: false, detail: null }],
        [{ outcome: 'failed', error: 'thrown before any await', stale: false, detail: null }],
        [{ outcome: 'failed', error: 'not even an Error', stale: false, detail: null }],
        [{ outcome: 'succeeded', error: null, stale: false, detail: 'sent' }],
      ])
    })

    test('next() that throws or asks for an impossible state: the job is retried a lease later', async () => {
      const [throwing, impossible] = (await addJobs(db, ['throwing', 'impossible'])) as [number, number]
      await start({
        work: async () => ({ ok: false, error: 'refused' }),
        next(claim) {
          if (claim.job.payload === 'throwing') throw new Error('bug in next()')
          return { state: 'in_flight' }
        },
      })
      const retried = async (id: number) => {
        const row = await jobRow(db, id)
        return row?.state === 'pending' && row.due === false && (await attemptsOf(db, id)).length === 1
      }
      await eventually(async () => (await retried(throwing)) && retried(impossible), 20_000, 'both put back')
      const [attempt] = await attemptsOf(db, throwing)
      assert.equal(attempt?.error, 'refused')
      assert.equal(attempt?.stale, false)
    })

    test('at most perGroup attempts of one group run at once; other groups are not held up', async () => {
      const a = await addJobs(
        db,
        Array.from({ length: 6 }, (_, i) => `a${i}`),
        { group: 'a' },
      )
      const b = await addJobs(db, ['b0', 'b1'], { group: 'b' })
      const running = new Map<string, number>()
      const most = new Map<string, number>()
      const { done: gate, signal: open } = latch()
      await start({
        concurrency: 10,
        perGroup: 2,
        async work(claim) {
          const group = claim.group as string
          running.set(group, (running.get(group) ?? 0) + 1)
          most.set(group, Math.max(most.get(group) ?? 0, running.get(group) ?? 0))
          await gate
          running.set(group, (running.get(group) ?? 1) - 1)
          return { ok: true }
        },
      })
      await eventually(
        async () => running.get('a') === 2 && running.get('b') === 2,
        20_000,
        'two of each running',
      )
      open()
      await eventually(allIn([...a, ...b], 'done'), 20_000, 'all done')
      assert.deepEqual(Object.fromEntries(most), { a: 2, b: 2 })
    })

    test("a group's backlog takes no more than its limit: a job of another group due later runs at once", async () => {
      const slow = await addJobs(
        db,
        Array.from({ length: 10 }, (_, i) => `slow${i}`),
        { group: 'slow' },
      )
      const { done: gate, signal: open } = latch()
      const started: string[] = []
      await start({
        concurrency: 4,
        perGroup: 2,
        async work(claim) {
          started.push(claim.job.payload)
          if (claim.group === 'slow') await gate
          return { ok: true }
        },
      })
      await eventually(async () => started.length === 2, 20_000, 'two slow jobs running')
      const [fast] = (await addJobs(db, ['fast'], { group: 'fast' })) as [number]
      await jobQueue.notify(db)
      try {
        await eventually(async () => (await stateOf(fast)) === 'done', 20_000, 'the fast job done')
        const [claimed] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE group_key = 'slow' AND state = 'in_flight'`,
        )
        assert.equal(claimed?.n, 2, 'the slow group holds only the claims it runs')
      } finally {
        open()
      }
      await eventually(allIn(slow, 'done'), 20_000, 'all slow jobs done')
    })

    test('two slow groups with backlogs leave room for a third group', async () => {
      for (const group of ['slowA', 'slowB']) {
        await addJobs(
          db,
          Array.from({ length: 20 }, (_, i) => `${group}${i}`),
          { group },
        )
      }
      const { done: gate, signal: open } = latch()
      let slowRunning = 0
      await start({
        concurrency: 8,
        perGroup: 2,
        async work(claim) {
          if (claim.group !== 'fast') {
            slowRunning++
            await gate
          }
          return { ok: true }
        },
      })
      await eventually(async () => slowRunning === 4, 20_000, 'both slow groups running')
      const [fast] = (await addJobs(db, ['fast'], { group: 'fast' })) as [number]
      await jobQueue.notify(db)
      try {
        await eventually(async () => (await stateOf(fast)) === 'done', 20_000, 'the fast job done')
      } finally {
        open()
      }
    })

    test("a group's backlog is worked through beside a saturated group without waiting for a poll", async () => {
      await addJobs(
        db,
        Array.from({ length: 4 }, (_, i) => `slow${i}`),
        { group: 'slow' },
      )
      const fast = await addJobs(
        db,
        Array.from({ length: 30 }, (_, i) => `fast${i}`),
        { group: 'fast' },
      )
      const { done: gate, signal: open } = latch()
      // A poll longer than the wait below: every claim must come from a wake-up.
      await start({
        concurrency: 16,
        perGroup: 4,
        pollMs: 600_000,
        async work(claim) {
          if (claim.group === 'slow') await gate
          return { ok: true }
        },
      })
      try {
        await eventually(allIn(fast, 'done'), 20_000, 'every fast job done')
      } finally {
        open()
      }
    })

    test('heartbeats renew the lease of a long attempt, which then completes under its claim', async () => {
      const [id] = (await addJobs(db, ['long'])) as [number]
      const { done: finished, signal: finish } = latch()
      await start({ leaseSeconds: 0.3, work: () => finished.then(() => ({ ok: true })) })
      await eventually(
        async () => {
          const [row] = await db.query<{ renewed: boolean }>(
            `SELECT due_at > claimed_at + interval '0.5 seconds' AS renewed FROM jobs WHERE job_id = $1`,
            [id],
          )
          return row?.renewed
        },
        20_000,
        'the lease renewed past its first end',
      )
      finish()
      await eventually(allIn([id], 'done'), 20_000, 'done')
      assert.deepEqual(
        (await attemptsOf(db, id)).map((a) => [a.claim_no, a.stale]),
        [[1, false]],
      )
    })

    test('a NOTIFY wakes an idle runner', async () => {
      const done: string[] = []
      await start({
        pollMs: 600_000,
        work: async (claim) => {
          done.push(claim.job.payload)
          return { ok: true }
        },
      })
      // The runner has looked once, found nothing, and sleeps for the poll interval.
      const [id] = (await addJobs(db, ['notified'])) as [number]
      await jobQueue.notify(db)
      await eventually(allIn([id], 'done'), 20_000, 'done after the NOTIFY')
      assert.deepEqual(done, ['notified'])
    })

    test('wake(ids) has the next claim take those jobs though they are not due yet', async () => {
      const [later, named] = (await addJobs(db, ['later', 'named'], { dueInSeconds: 3600 })) as [
        number,
        number,
      ]
      const woken = await start({ pollMs: 600_000, work: async () => ({ ok: true }) })
      woken.wake([named])
      await eventually(allIn([named], 'done'), 20_000, 'the named job done')
      assert.equal(await stateOf(later), 'pending')
    })

    test('wake(ids) naming a job in flight here claims it again once its attempt is recorded', async () => {
      const [id] = (await addJobs(db, ['twice'])) as [number]
      let attempts = 0
      let woken: Runner | undefined
      await start({
        pollMs: 600_000,
        async work() {
          attempts++
          if (attempts === 1) woken?.wake([id]) // while its attempt is under way
          return { ok: attempts > 1 }
        },
        // The first attempt puts it back for an hour: only the wake can bring it back sooner.
        next: (_claim, attempt) =>
          attempt.kind === 'done' && attempt.result.ok
            ? { state: 'done' }
            : { state: 'pending', delaySeconds: 3600 },
      })
      woken = runner
      woken?.wake()
      await eventually(allIn([id], 'done'), 20_000, 'done on its second attempt')
      assert.equal(attempts, 2)
    })

    test('a job falling due between the claim and the sweep is claimed shortly, not a poll later', async () => {
      const [id] = (await addJobs(db, ['late'], { dueInSeconds: 3600 })) as [number]
      let fellDue = false
      // The queue as it is, but for its first claim: the job falls due right after it.
      const queue: typeof jobQueue = Object.create(jobQueue, {
        claim: {
          value: async (
            on: Parameters<typeof jobQueue.claim>[0],
            options: Parameters<typeof jobQueue.claim>[1],
          ) => {
            const claims = await jobQueue.claim(on, options)
            if (!fellDue) {
              fellDue = true
              await db.query('UPDATE jobs SET due_at = now() WHERE job_id = $1', [id])
            }
            return claims
          },
        },
      })
      await start({ queue, pollMs: 600_000, work: async () => ({ ok: true }) })
      await eventually(allIn([id], 'done'), 20_000, 'done')
    })

    /** Jobs inserted already claimed by `claimant` (claim 1), as an application does to skip a claim. */
    const addClaimed = async (claimant: string, payloads: readonly string[]) => {
      const rows = await db.query<{ job_id: number; payload: string }>(
        `INSERT INTO jobs (payload, state, due_at, claim_no, claimed_by, claimed_at)
         SELECT p, 'in_flight', now() + interval '30 seconds', 1, $2, now()
           FROM unnest($1::text[]) WITH ORDINALITY AS x(p, n) ORDER BY n
         RETURNING job_id, payload`,
        [payloads, claimant],
      )
      return rows.map(
        (row): Claim<number, TestJob> => ({
          id: row.job_id,
          fence: { claimant, claimNo: 1 },
          group: null,
          job: { payload: row.payload, failures: 0 },
        }),
      )
    }
    const attemptSummary = async (id: number) =>
      (await attemptsOf(db, id)).map((a) => [a.claim_no, a.claimed_by, a.outcome, a.stale])

    test('adopt(): claims made elsewhere are worked within concurrency; a fence not current moves nothing', async () => {
      const claims = await addClaimed('adopter', ['a', 'b', 'c'])
      const [theirs] = await addClaimed('someone-else', ['theirs'])
      const stale = { ...(theirs as Claim<number, TestJob>), fence: { claimant: 'adopter', claimNo: 1 } }
      let running = 0
      let most = 0
      const { done: gate, signal: open } = latch()
      const adopter = await start({
        claimant: 'adopter',
        concurrency: 2,
        pollMs: 600_000,
        async work() {
          running++
          most = Math.max(most, running)
          await gate
          running--
          return { ok: true }
        },
      })
      adopter.adopt([...claims, stale])
      await eventually(async () => running === 2, 20_000, 'two adopted claims running')
      open()
      const ids = claims.map((claim) => claim.id)
      await eventually(allIn(ids, 'done'), 20_000, 'the adopted jobs done')
      await eventually(async () => (await attemptsOf(db, stale.id)).length === 1, 20_000, 'the stale attempt')
      assert.equal(most, 2)
      for (const id of ids) assert.deepEqual(await attemptSummary(id), [[1, 'adopter', 'succeeded', false]])
      assert.deepEqual(await attemptSummary(stale.id), [[1, 'adopter', 'succeeded', true]])
      assert.deepEqual(await jobRow(db, stale.id), {
        state: 'in_flight',
        claim_no: 1,
        claimed_by: 'someone-else',
        due: false,
      })
    })

    test('an adopted attempt put back for a retry is claimed again when due, without waiting for a poll', async () => {
      const [claim] = (await addClaimed('adopter', ['flaky'])) as [Claim<number, TestJob>]
      let calls = 0
      const adopter = await start({
        claimant: 'adopter',
        pollMs: 600_000,
        work: async () => ({ ok: ++calls > 1, error: 'not yet' }),
        next: (_claim, attempt) =>
          attempt.kind === 'done' && attempt.result.ok
            ? { state: 'done' }
            : { state: 'pending', delaySeconds: 0.05 },
      })
      adopter.adopt([claim])
      await eventually(allIn([claim.id], 'done'), 20_000, 'done on its retry')
      assert.deepEqual(await attemptSummary(claim.id), [
        [1, 'adopter', 'failed', false],
        [2, 'adopter', 'succeeded', false],
      ])
    })

    test('stop hands back adopted claims still waiting for a slot, and aborts the running one', async () => {
      const [runs, waits] = (await addClaimed('adopter', ['runs', 'waits'])) as [
        Claim<number, TestJob>,
        Claim<number, TestJob>,
      ]
      const { done: hasStarted, signal: started } = latch()
      const adopter = await start({
        claimant: 'adopter',
        concurrency: 1,
        pollMs: 600_000,
        work: (_claim, signal) =>
          new Promise((_resolve, reject) => {
            started()
            signal.addEventListener('abort', () => reject(new Error('stopped')))
          }),
      })
      adopter.adopt([runs, waits])
      await hasStarted
      await adopter.stop(0)
      runner = undefined
      for (const id of [runs.id, waits.id]) {
        assert.deepEqual(await jobRow(db, id), { state: 'pending', claim_no: 1, claimed_by: null, due: true })
      }
      assert.deepEqual(await attemptSummary(runs.id), [[1, 'adopter', 'aborted', true]])
      assert.deepEqual(await attemptsOf(db, waits.id), [])
    })

    test('stop past its grace: the aborted attempt is recorded and moves nothing another claimant took', async () => {
      const [running, queued] = (await addJobs(db, ['hangs', 'queued'], { group: 'g' })) as [number, number]
      let takenOver: Claim<number, TestJob>[] = []
      const { done: hasStarted, signal: started } = latch()
      const first = await start({
        perGroup: 1,
        work: (claim, signal) =>
          new Promise((_resolve, reject) => {
            started()
            signal.addEventListener('abort', () => {
              // Handed back already: another instance claims it before this attempt is recorded.
              jobQueue
                .claim(db, { claimant: 'other', limit: 5, leaseSeconds: 30, ids: [claim.id] })
                .then((claims) => {
                  takenOver = claims
                  reject(new Error('aborted by stop'))
                }, reject)
            })
          }),
      })
      await hasStarted
      await first.stop(50)
      runner = undefined

      // Both were handed back (the queued one at once, the running one past the grace) and taken over.
      assert.deepEqual(
        takenOver.map((c) => [c.id, c.fence.claimNo]).sort(),
        [
          [running, 2],
          [queued, 2],
        ].sort(),
      )
      const row = await jobRow(db, running)
      assert.deepEqual(row, { state: 'in_flight', claim_no: 2, claimed_by: 'other', due: false })
      assert.deepEqual(
        (await attemptsOf(db, running)).map(({ claim_no, claimed_by, outcome, error, stale }) => ({
          claim_no,
          claimed_by,
          outcome,
          error,
          stale,
        })),
        [
          {
            claim_no: 1,
            claimed_by: first.claimant,
            outcome: 'aborted',
            error: 'aborted by stop',
            stale: true,
          },
        ],
      )
      // The claim that waited for the group's slot was handed back unattempted.
      assert.deepEqual(await attemptsOf(db, queued), [])
    })
  })
}
