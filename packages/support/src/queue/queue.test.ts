import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { testBackends } from '@earshot/test-kit/backends'
import { eventually, latch } from '@earshot/test-kit/eventually'
import {
  addJobs,
  attemptsOf,
  createJobTables,
  type JobState,
  jobMachine,
  jobQueue,
  jobRow,
  openTestDatabase,
  type TestDatabase,
  type TestJob,
} from '@earshot/test-kit/queue-fixture'
import { rowsRead } from '@earshot/test-kit/table-reads'
import type { Database, Queryable } from '../storage/database.js'
import { type Claim, type ClaimRef, defineQueue } from './job-queue.js'
import { defineQueueMachine, ILLEGAL_TRANSITION_SQLSTATE, IllegalTransitionError } from './state-machine.js'

const LEASE = 30

/**
 * How many times, while `run` ran, the statements of `connection` whose text is like `pattern` ran on a
 * generic plan and on one made for their values (pg_prepared_statements shows one connection's).
 */
async function plansDuring(
  connection: Queryable,
  pattern: string,
  run: () => Promise<void>,
): Promise<{ generic: number; custom: number }> {
  const plans = async () => {
    const [row] = await connection.query<{ generic: number; custom: number }>(
      `SELECT coalesce(sum(generic_plans), 0)::int AS generic, coalesce(sum(custom_plans), 0)::int AS custom
         FROM pg_prepared_statements WHERE statement LIKE $1`,
      [pattern],
    )
    return row ?? { generic: 0, custom: 0 }
  }
  const before = await plans()
  await run()
  const after = await plans()
  return { generic: after.generic - before.generic, custom: after.custom - before.custom }
}

const attempt = { startedAt: Date.parse('2026-11-23T10:00:00Z'), durationMs: 12 }

for (const backend of testBackends) {
  describe(`job queue on ${backend}: claims, fences, transitions`, { timeout: 60_000 }, () => {
    let test_: TestDatabase
    let db: Database
    before(async () => {
      test_ = await openTestDatabase(backend)
      db = test_.db
      await createJobTables(db)
    })
    beforeEach(async () => {
      await db.query('TRUNCATE jobs, job_attempts')
    })
    after(() => test_?.close())

    const claimOne = async (claimant: string, ids?: number[]): Promise<Claim<number, TestJob>> => {
      const [claim, ...more] = await jobQueue.claim(db, { claimant, limit: 1, leaseSeconds: LEASE, ids })
      assert.ok(claim, `${claimant} claimed a job`)
      assert.equal(more.length, 0)
      return claim
    }

    test('a claim carries the job, its group and a fence: the claimant and the next claim number', async () => {
      const [id] = await addJobs(db, ['first'], { group: 'g1' })
      const claim = await claimOne('a')
      assert.deepEqual(claim, {
        id,
        fence: { claimant: 'a', claimNo: 1 },
        group: 'g1',
        job: { payload: 'first', failures: 0 },
      })
      assert.deepEqual(await jobRow(db, id as number), {
        state: 'in_flight',
        claim_no: 1,
        claimed_by: 'a',
        due: false,
      })
      assert.deepEqual(await jobQueue.claim(db, { claimant: 'b', limit: 5, leaseSeconds: LEASE }), [])
    })

    test('claims take due jobs oldest first, skip excluded groups, and take named jobs before they are due', async () => {
      const [late] = await addJobs(db, ['late'], { dueInSeconds: 3600 })
      const [x1, x2] = await addJobs(db, ['x1', 'x2'], { group: 'x' })
      const [y1] = await addJobs(db, ['y1'], { group: 'y' })
      const claims = await jobQueue.claim(db, {
        claimant: 'a',
        limit: 10,
        leaseSeconds: LEASE,
        excludeGroups: ['x'],
      })
      assert.deepEqual(
        claims.map((c) => c.id),
        [y1],
      )
      const rest = await jobQueue.claim(db, { claimant: 'a', limit: 10, leaseSeconds: LEASE })
      assert.deepEqual(
        rest.map((c) => c.id),
        [x1, x2],
      )
      assert.equal(await jobRow(db, late as number).then((row) => row?.state), 'pending')
      const [due] = await addJobs(db, ['due'])
      const named = await jobQueue.claim(db, {
        claimant: 'a',
        limit: 1,
        leaseSeconds: LEASE,
        ids: [late as number],
      })
      assert.deepEqual(
        named.map((c) => c.id),
        [late],
        'named first',
      )
      const next = await jobQueue.claim(db, {
        claimant: 'a',
        limit: 5,
        leaseSeconds: LEASE,
        ids: [late as number],
      })
      assert.deepEqual(
        next.map((c) => c.id),
        [due],
        'then what is due',
      )
    })

    test('a claim takes at most perGroup jobs of a group, less those the claimant holds of it', async () => {
      const a = await addJobs(db, ['a0', 'a1', 'a2', 'a3'], { group: 'a' })
      const b = await addJobs(db, ['b0', 'b1', 'b2'], { group: 'b' })
      const free = await addJobs(db, ['none0', 'none1', 'none2'])
      const claims = await jobQueue.claim(db, {
        claimant: 'x',
        limit: 10,
        leaseSeconds: LEASE,
        perGroup: 2,
        heldByGroup: new Map([['b', 1]]),
      })
      assert.deepEqual(
        claims.map((c) => c.id).sort((x, y) => x - y),
        [a[0], a[1], b[0], ...free],
        'two of a (oldest first), one more of b, every job without a group',
      )
    })

    test('claim numbers only grow: hand back, lease over and claim again each take the next number', async () => {
      const [id] = await addJobs(db, ['grows'])
      const first = await claimOne('a')
      assert.equal(await jobQueue.release(db, [first]), 1)
      assert.deepEqual(await jobRow(db, id as number), {
        state: 'pending',
        claim_no: 1,
        claimed_by: null,
        due: true,
      })
      const second = await claimOne('b')
      assert.equal(second.fence.claimNo, 2)

      // The lease runs out: the sweep puts the job back, keeping its claim number.
      await db.query(`UPDATE jobs SET due_at = now() - interval '1 second' WHERE job_id = $1`, [id])
      const swept = await jobQueue.sweep(db, 100)
      assert.equal(swept.moved, 1)
      assert.deepEqual(await jobRow(db, id as number), {
        state: 'pending',
        claim_no: 2,
        claimed_by: null,
        due: true,
      })
      const third = await claimOne('a')
      assert.equal(third.fence.claimNo, 3)

      assert.ok(
        await jobQueue.fail(db, third, { state: 'pending', delaySeconds: 0 }, { ...attempt, error: 'x' }),
      )
      assert.equal((await claimOne('c')).fence.claimNo, 4)
    })

    test('a stale fence completes, fails and releases nothing, but its attempt is recorded', async () => {
      const [id] = await addJobs(db, ['fenced'])
      const old = await claimOne('a')
      await jobQueue.release(db, [old])
      const current = await claimOne('b')

      const done = { state: 'done' as const }
      assert.equal(
        await jobQueue.complete(db, old, done, { ...attempt, columns: { detail: 'late ack' } }),
        false,
      )
      assert.equal(
        await jobQueue.fail(
          db,
          old,
          { state: 'pending', delaySeconds: 1 },
          { ...attempt, error: 'late failure' },
        ),
        false,
      )
      assert.equal(await jobQueue.release(db, [old]), 0)
      assert.equal(await jobQueue.renew(db, [old], LEASE), 0)
      // The right number under another claimant's name is no fence either.
      const impostor: ClaimRef<number> = { id: id as number, fence: { claimant: 'a', claimNo: 2 } }
      assert.equal(await jobQueue.complete(db, impostor, done, attempt), false)
      assert.deepEqual(await jobRow(db, id as number), {
        state: 'in_flight',
        claim_no: 2,
        claimed_by: 'b',
        due: false,
      })

      assert.equal(await jobQueue.renew(db, [current], LEASE), 1)
      assert.equal(
        await jobQueue.complete(db, current, done, { ...attempt, columns: { detail: 'ack' } }),
        true,
      )
      assert.deepEqual(await jobRow(db, id as number), {
        state: 'done',
        claim_no: 2,
        claimed_by: null,
        due: null,
      })
      // And once it moved on, the current fence is spent too.
      assert.equal(await jobQueue.complete(db, current, done, attempt), false)

      const attempts = await attemptsOf(db, id as number)
      assert.deepEqual(
        attempts.map(({ attempt_id: _, ...rest }) => rest),
        [
          {
            claim_no: 1,
            claimed_by: 'a',
            outcome: 'succeeded',
            error: null,
            stale: true,
            detail: 'late ack',
          },
          {
            claim_no: 1,
            claimed_by: 'a',
            outcome: 'failed',
            error: 'late failure',
            stale: true,
            detail: null,
          },
          { claim_no: 2, claimed_by: 'a', outcome: 'succeeded', error: null, stale: true, detail: null },
          { claim_no: 2, claimed_by: 'b', outcome: 'succeeded', error: null, stale: false, detail: 'ack' },
          { claim_no: 2, claimed_by: 'b', outcome: 'succeeded', error: null, stale: true, detail: null },
        ],
      )
      const ids = attempts.map((a) => a.attempt_id)
      assert.deepEqual(
        ids,
        [...ids].sort((x, y) => x - y),
        'numbered from a sequence',
      )
      assert.equal(new Set(ids).size, ids.length)
    })

    test('one batch settles current and stale claims of the same job apart', async () => {
      const [id] = await addJobs(db, ['batch'])
      const old = await claimOne('a')
      await jobQueue.release(db, [old])
      const current = await claimOne('a')
      const result = await jobQueue.settle(db, [
        { ...old, next: { state: 'failed' }, attempt: { ...attempt, outcome: 'failed', error: 'old' } },
        {
          ...current,
          next: { state: 'pending', delaySeconds: 60 },
          attempt: { ...attempt, outcome: 'failed', error: 'new' },
        },
      ])
      assert.deepEqual(result, { moved: 1, stale: 1 })
      const row = await jobRow(db, id as number)
      assert.equal(row?.state, 'pending')
      assert.equal(row?.due, false, 'due after its delay')
      const [nextAttempt] = await db.query<{ next: boolean }>(
        `SELECT next_attempt_at > now() AS next FROM job_attempts WHERE job_id = $1 AND NOT stale`,
        [id],
      )
      assert.equal(nextAttempt?.next, true, 'the attempt names when the next one is due')
      const [failures] = await db.query<{ failures: number }>('SELECT failures FROM jobs WHERE job_id = $1', [
        id,
      ])
      assert.equal(failures?.failures, 1, "the settle hook ran for the current claim's failure only")
    })

    test('the guard trigger refuses an UPDATE to a state the machine does not allow', async () => {
      const [id] = await addJobs(db, ['guarded'])
      await assert.rejects(
        db.query(`UPDATE jobs SET state = 'done', due_at = NULL WHERE job_id = $1`, [id]),
        (error: { code?: string; message?: string }) =>
          error.code === ILLEGAL_TRANSITION_SQLSTATE && /pending → done/.test(error.message ?? ''),
      )
      // A statement changing other columns, or setting the same state, is no transition.
      await db.query(`UPDATE jobs SET state = 'pending', payload = 'renamed' WHERE job_id = $1`, [id])
      // Allowed: claimed, then failed, then replayed.
      const claim = await claimOne('a')
      assert.ok(await jobQueue.fail(db, claim, { state: 'failed' }, { ...attempt, error: 'gave up' }))
      await db.query(`UPDATE jobs SET state = 'pending', due_at = now() WHERE job_id = $1`, [id])
      await assert.rejects(
        db.query(`UPDATE jobs SET state = 'snoozed' WHERE job_id = $1`, [id]),
        (error: { code?: string }) => error.code === ILLEGAL_TRANSITION_SQLSTATE,
      )
      assert.equal((await jobRow(db, id as number))?.state, 'pending')
    })

    test('settling into a state a claim cannot reach is refused before anything is written', async () => {
      const [id] = await addJobs(db, ['refused'])
      const claim = await claimOne('a')
      await assert.rejects(
        jobQueue.settle(db, [
          { ...claim, next: { state: 'in_flight' }, attempt: { ...attempt, outcome: 'x' } },
        ]),
        IllegalTransitionError,
      )
      await assert.rejects(jobQueue.complete(db, claim, { state: 'snoozed' }, attempt), /needs delaySeconds/)
      assert.deepEqual(await attemptsOf(db, id as number), [])
      assert.equal((await jobRow(db, id as number))?.state, 'in_flight')
    })

    test("a waiting state's timer moves the job on once due; the sweep says when the next job is due", async () => {
      const [id] = await addJobs(db, ['snoozer'])
      await addJobs(db, ['later'], { dueInSeconds: 3600 })
      const claim = await claimOne('a')
      assert.ok(await jobQueue.complete(db, claim, { state: 'snoozed', delaySeconds: 3600 }, attempt))
      const waiting = await jobQueue.sweep(db, 100)
      assert.equal(waiting.moved, 0)
      assert.ok(waiting.nextDueSeconds !== undefined && waiting.nextDueSeconds > 3500)

      await db.query(`UPDATE jobs SET due_at = now() - interval '1 second' WHERE job_id = $1`, [id])
      assert.equal((await jobQueue.sweep(db, 100)).moved, 1)
      assert.deepEqual(await jobRow(db, id as number), {
        state: 'pending',
        claim_no: 1,
        claimed_by: null,
        due: true,
      })
      assert.equal((await jobQueue.sweep(db, 100)).nextDueSeconds, 0)
    })

    test('a sweep is planned once on a connection, not at every call: its limit is written into it', async () => {
      await db.session(async (session) => {
        const plans = await plansDuring(session, 'WITH expired AS%', async () => {
          for (let i = 0; i < 8; i++) await jobQueue.sweep(session, 100)
        })
        assert.deepEqual(plans, { generic: 8, custom: 0 })
      })
    })

    test('a claim leaving a group out is planned once on a connection, not at every call', async () => {
      await db.query('CREATE TABLE IF NOT EXISTS paused_groups (group_key text PRIMARY KEY)')
      const grouped = defineQueue({ ...jobQueue.spec, pausedGroups: 'SELECT group_key FROM paused_groups' })
      await addJobs(db, ['busy'], { group: 'busy', dueInSeconds: -60 })
      // A database of one connection, whose prepared statements the count sees.
      const one = backend === 'pglite' ? db : await test_.openAnother(1)
      const plans = await plansDuring(one, 'WITH RECURSIVE ready_groups%', async () => {
        for (let i = 0; i < 8; i++) {
          const claims = await grouped.claim(one, {
            claimant: 'a',
            limit: 1,
            leaseSeconds: LEASE,
            excludeGroups: ['busy'],
          })
          assert.deepEqual(claims, [])
        }
      })
      assert.deepEqual(plans, { generic: 8, custom: 0 })
    })

    test("a claim leaving a group out takes the others' due jobs in due order, reading none of its backlog", async () => {
      await db.query('CREATE TABLE IF NOT EXISTS paused_groups (group_key text PRIMARY KEY)')
      const grouped = defineQueue({ ...jobQueue.spec, pausedGroups: 'SELECT group_key FROM paused_groups' })
      const backlog = Array.from({ length: 2000 }, (_, i) => `busy ${i}`)
      await addJobs(db, backlog, { group: 'busy', dueInSeconds: -60 })
      const [y0] = await addJobs(db, ['y0'], { group: 'y', dueInSeconds: -9 })
      const [free] = await addJobs(db, ['free'], { dueInSeconds: -8 })
      const [z0] = await addJobs(db, ['z0'], { group: 'z', dueInSeconds: -7 })
      const [y1] = await addJobs(db, ['y1'], { group: 'y', dueInSeconds: -6 })
      await addJobs(db, ['z later'], { group: 'z', dueInSeconds: 3600 })
      await db.query('ANALYZE jobs')
      const claimOthers = async (limit: number) => {
        let read = 0
        const ids = await db.transaction(async (tx) => {
          const claims = await grouped.claim(tx, {
            claimant: 'a',
            limit,
            leaseSeconds: LEASE,
            excludeGroups: ['busy'],
            perGroup: 10,
          })
          read = (await rowsRead(tx, ['jobs'])).jobs ?? 0
          return claims.map((c) => c.id)
        })
        return { ids, read }
      }
      const first = await claimOthers(3)
      assert.deepEqual(first.ids, [y0, free, z0])
      assert.ok(first.read < backlog.length / 10, `the claim read ${first.read} jobs`)
      assert.deepEqual((await claimOthers(10)).ids, [y1])
      const none = await claimOthers(10)
      assert.deepEqual(none.ids, [])
      assert.ok(none.read < backlog.length / 10, `the claim that found nothing read ${none.read} jobs`)
    })

    test("a paused group's ready jobs are held out of the due path, then resumed in due order", async () => {
      await db.query('CREATE TABLE IF NOT EXISTS paused_groups (group_key text PRIMARY KEY)')
      await db.query(`INSERT INTO paused_groups VALUES ('p') ON CONFLICT DO NOTHING`)
      const pausing = defineQueue({ ...jobQueue.spec, pausedGroups: 'SELECT group_key FROM paused_groups' })
      const [p1] = await addJobs(db, ['p1'], { group: 'p', dueInSeconds: -2 })
      const [p0] = await addJobs(db, ['p0'], { group: 'p', dueInSeconds: -3 })
      const [p2] = await addJobs(db, ['p2'], { group: 'p', dueInSeconds: 3600 })
      const [free] = await addJobs(db, ['free'])
      const [other] = await addJobs(db, ['o0'], { group: 'o' })
      const [later] = await addJobs(db, ['later'], { dueInSeconds: 3600 })
      const claims = await pausing.claim(db, {
        claimant: 'a',
        limit: 10,
        leaseSeconds: LEASE,
        ids: [p0 as number],
      })
      assert.deepEqual(
        claims.map((c) => c.id),
        [free, other],
        'neither by due order nor by name',
      )
      const swept = await pausing.sweep(db, 2)
      assert.equal(swept.moved, 2, 'a batch of the paused group held')
      assert.equal((await pausing.sweep(db, 2)).moved, 1, 'then the rest')
      for (const id of [p0, p1, p2]) assert.equal((await jobRow(db, id as number))?.state, 'held')
      const idle = await pausing.sweep(db, 100)
      assert.equal(idle.moved, 0)
      assert.ok(
        idle.nextDueSeconds !== undefined && idle.nextDueSeconds > LEASE - 5,
        'next due: the leases, not the held jobs',
      )
      const [{ n } = { n: -1 }] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs WHERE due_at <= now() AND state = 'pending'`,
      )
      assert.equal(n, 0, 'nothing held counts as due')

      // A claim of the paused group still in flight when it was paused ends its lease as usual, then is held.
      await db.query(`UPDATE jobs SET group_key = 'p' WHERE job_id = $1`, [other])
      await db.query(`UPDATE jobs SET due_at = now() - interval '1 second' WHERE job_id = $1`, [other])
      assert.equal((await pausing.sweep(db, 100)).moved, 1)
      assert.equal((await jobRow(db, other as number))?.state, 'pending')
      assert.equal((await pausing.sweep(db, 100)).moved, 1)
      assert.equal((await jobRow(db, other as number))?.state, 'held')

      await db.query(`DELETE FROM paused_groups WHERE group_key = 'p'`)
      assert.equal(await pausing.resume(db, ['p'], 2), 2, 'the two due earliest')
      assert.deepEqual(
        (await pausing.claim(db, { claimant: 'a', limit: 10, leaseSeconds: LEASE })).map((c) => c.id),
        [p0, p1],
      )
      assert.equal(await pausing.resume(db, ['p'], 10), 2)
      assert.deepEqual(
        (await pausing.claim(db, { claimant: 'a', limit: 10, leaseSeconds: LEASE })).map((c) => c.id),
        [other, p2],
        'a job held before it was due is due once resumed',
      )
      assert.equal((await jobRow(db, later as number))?.state, 'pending')
      assert.equal(await pausing.resume(db, ['p'], 10), 0)
    })

    test("a rated group's jobs are claimed a tenth of a second's worth at a time, and due again when its time comes", async () => {
      await db.query(
        `CREATE TABLE IF NOT EXISTS rates (group_id int PRIMARY KEY, per_second int, next_at timestamptz NOT NULL DEFAULT now())`,
      )
      await db.query(
        `INSERT INTO rates VALUES (1, 1, now()), (2, 20, now()) ON CONFLICT (group_id) DO UPDATE SET next_at = now()`,
      )
      const rated = defineQueue<JobState, number, TestJob>({
        ...jobQueue.spec,
        rated: { table: 'rates', key: 'group_id', perSecond: 'per_second', nextAt: 'next_at' },
      })
      const slow = await addJobs(db, ['s0', 's1', 's2'], { group: '1' })
      const fast = await addJobs(db, ['f0', 'f1', 'f2', 'f3'], { group: '2' })
      const [free] = await addJobs(db, ['free'])
      const claimed = async () =>
        (await rated.claim(db, { claimant: 'a', limit: 10, leaseSeconds: LEASE, perGroup: 10 })).map(
          (c) => c.id,
        )
      // One a second: one; twenty a second: two (a tenth of a second's worth); no rate: all.
      assert.deepEqual(await claimed(), [slow[0], fast[0], fast[1], free])
      const [{ gap } = { gap: 0 }] = await db.query<{ gap: number }>(
        `SELECT extract(epoch FROM max(next_at) FILTER (WHERE group_id = 1) - max(next_at) FILTER (WHERE group_id = 2))::float8 AS gap FROM rates`,
      )
      assert.ok(
        Math.abs(gap - 0.9) < 0.001,
        `the slow group's time comes a second after the claim, the fast one's a tenth (${gap})`,
      )
      // Until then claims pass the slow group by, and the sweep says when its time comes.
      assert.ok(!(await claimed()).some((id) => slow.includes(id)))
      const { nextDueSeconds } = await rated.sweep(db, 10)
      assert.ok(nextDueSeconds !== undefined && nextDueSeconds <= 1, `${nextDueSeconds}`)
    })

    test('a queue with a paused group needs a held state', () => {
      const { held: _held, ...rest } = jobMachine
      const noHeld = defineQueueMachine({
        ...rest,
        transitions: jobMachine.transitions.filter((t) => t.from !== 'held' && t.to !== 'held'),
      })
      assert.throws(
        () => defineQueue({ ...jobQueue.spec, machine: noHeld, pausedGroups: 'SELECT NULL::text' }),
        /pausedGroups needs a machine with a held state/,
      )
    })
  })
}

if (testBackends.includes('postgres')) {
  describe('job queue on postgres: concurrent claimants', { timeout: 60_000 }, () => {
    let test_: TestDatabase
    let other: Database
    before(async () => {
      test_ = await openTestDatabase('postgres')
      other = await test_.openAnother()
      await createJobTables(test_.db)
    })
    after(() => test_?.close())

    test('a claim skips the jobs another open claim has locked, instead of waiting or taking them', async () => {
      const ids = await addJobs(
        test_.db,
        Array.from({ length: 10 }, (_, i) => `locked-${i}`),
      )
      const { done: holding, signal: release } = latch()
      let firstClaims: Claim<number, TestJob>[] = []
      const { done: firstHasClaimed, signal: claimed } = latch()
      // Claimant a's transaction stays open (its row locks held) while b claims.
      const first = test_.db.transaction(async (tx) => {
        firstClaims = await jobQueue.claim(tx, { claimant: 'a', limit: 4, leaseSeconds: LEASE })
        claimed()
        await holding
      })
      await firstHasClaimed
      const second = await jobQueue.claim(other, { claimant: 'b', limit: 10, leaseSeconds: LEASE })
      release()
      await first
      assert.deepEqual(
        firstClaims.map((c) => c.id),
        ids.slice(0, 4),
      )
      assert.deepEqual(
        second.map((c) => c.id),
        ids.slice(4),
      )
    })

    test('two claimants claiming at once never get the same job', async () => {
      await test_.db.query('TRUNCATE jobs, job_attempts')
      const ids = await addJobs(
        test_.db,
        Array.from({ length: 500 }, (_, i) => `race-${i}`),
      )
      const drain = async (db: Database, claimant: string) => {
        const got: number[] = []
        for (;;) {
          const claims = await jobQueue.claim(db, { claimant, limit: 7, leaseSeconds: LEASE })
          if (claims.length === 0) return got
          got.push(...claims.map((c) => c.id))
        }
      }
      const [a, b, c] = await Promise.all([drain(test_.db, 'a'), drain(other, 'b'), drain(test_.db, 'c')])
      const all = [...a, ...b, ...c]
      assert.equal(all.length, ids.length, 'every job claimed once')
      assert.deepEqual(new Set(all), new Set(ids))
      assert.ok(a.length > 0 && b.length > 0, 'both pools took part')
      const [counts] = await test_.db.query<{ max: number }>('SELECT max(claim_no) AS max FROM jobs')
      assert.equal(counts?.max, 1)
    })

    // A statement that locked jobs in another order than a concurrent one (a receipt confirming
    // deliveries locks them in id order) would deadlock with it, and PostgreSQL aborts one only after
    // deadlock_timeout. Here the lower job is held; the statement, given the higher one first, must wait
    // for the lower one without having locked the higher.
    const lockingStatements: [string, (db: Database, claims: ClaimRef<number>[]) => Promise<unknown>][] = [
      [
        'settle',
        (db, claims) =>
          jobQueue.settle(
            db,
            claims.map((c) => ({
              ...c,
              next: { state: 'done' },
              attempt: { outcome: 'succeeded', ...attempt },
            })),
          ),
      ],
      ['renew', (db, claims) => jobQueue.renew(db, claims, LEASE)],
      ['release', (db, claims) => jobQueue.release(db, claims)],
    ]
    for (const [name, run] of lockingStatements) {
      test(`${name} locks its jobs in id order`, async () => {
        await addJobs(test_.db, ['lower', 'higher'])
        const claims = await jobQueue.claim(test_.db, { claimant: 'a', limit: 2, leaseSeconds: LEASE })
        assert.equal(claims.length, 2)
        const [lower, higher] = [...claims].sort((x, y) => x.id - y.id) as [
          Claim<number, TestJob>,
          Claim<number, TestJob>,
        ]
        const { done: holding, signal: release } = latch()
        const { done: lowerLocked, signal: locked } = latch()
        const holder = test_.db.transaction(async (tx) => {
          await tx.query('SELECT 1 FROM jobs WHERE job_id = $1 FOR NO KEY UPDATE', [lower.id])
          locked()
          await holding
        })
        await lowerLocked
        const statement = run(other, [higher, lower])
        try {
          await eventually(
            async () => {
              const [row] = await test_.db.query<{ waiting: number }>(
                `SELECT count(*)::int AS waiting FROM pg_stat_activity
                  WHERE datname = current_database() AND wait_event_type = 'Lock'`,
              )
              return (row?.waiting ?? 0) > 0
            },
            10_000,
            `${name} to wait for the lower job's lock`,
          )
          const higherFree = await test_.db.transaction(async (tx) => {
            const rows = await tx.query(
              'SELECT 1 FROM jobs WHERE job_id = $1 FOR NO KEY UPDATE SKIP LOCKED',
              [higher.id],
            )
            return rows.length === 1
          })
          assert.ok(higherFree, `${name} locked the higher job while waiting for the lower one`)
        } finally {
          release()
          await holder
          await statement
        }
        await test_.db.query('TRUNCATE jobs, job_attempts')
      })
    }
  })
}

describe('queue state machine', { timeout: 10_000 }, () => {
  test('answers which transitions exist, where an event leads from, and how to walk between states', () => {
    assert.equal(jobMachine.allows('pending', 'in_flight'), true)
    assert.equal(jobMachine.allows('pending', 'done'), false)
    assert.deepEqual(jobMachine.sources('replay'), ['failed'])
    assert.deepEqual(jobMachine.path('pending', 'done'), ['in_flight', 'done'])
    assert.deepEqual(jobMachine.path('snoozed', 'failed'), ['pending', 'in_flight', 'failed'])
    assert.deepEqual(jobMachine.path('done', 'pending'), undefined)
    assert.deepEqual(jobMachine.path('done', 'done'), [])
  })

  test('refuses a definition a queue cannot run or SQL cannot hold', () => {
    const base = { ready: 'pending', claimed: 'in_flight', final: ['done'] } as const
    const claim = { from: 'pending', to: 'in_flight', on: 'claim' } as const
    const back = { from: 'in_flight', to: 'pending', on: 'lease over' } as const
    assert.throws(
      () => defineQueueMachine({ ...base, transitions: [claim] }),
      /needs the transition in_flight → pending/,
    )
    assert.throws(
      () => defineQueueMachine({ ...base, final: ["it's"], transitions: [claim, back] }),
      /not a lower-case identifier/,
    )
    assert.throws(
      () =>
        defineQueueMachine({
          ...base,
          transitions: [claim, back, { from: 'done', to: 'gone' as 'done', on: 'x' }],
        }),
      /unknown state/,
    )
    assert.ok(defineQueueMachine({ ...base, transitions: [claim, back] }))
  })
})
