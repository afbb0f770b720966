import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { type Database, openPostgres, type Queryable } from '@earshot/support/storage'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { eventually, latch } from '@earshot/test-kit/eventually'
import { removeEndpointIn, replaceWithPushUrl, updateEndpoint } from '../endpoints/endpoint-store.js'
import { enablePushUrl } from '../push-urls/push-url-health.js'
import { migrate } from '../storage/migrations.js'
import { deliveriesOfRecordings } from './deliveries-of-recordings.js'
import { replayFailedSince } from './delivery-replays.js'
import { deliveryQueue, scheduleDeliveries } from './delivery-store.js'

/*
 * Two transactions interleaved by hand on PostgreSQL, where a statement that decides to release, promote,
 * hold or resume a delivery must respect what a concurrent one is doing: the second statement either waits
 * for the first one's lock (seen in pg_stat_activity) or sees what it committed.
 */

const ALL_TYPES = Object.values(PushEventType)

describe('postgres: delivery decisions under concurrency', {
  timeout: 120_000,
  skip: !testBackends.includes('postgres') && 'DATABASE_URL is not set',
}, () => {
  let scratch: ScratchDatabase
  let db: Database
  before(async () => {
    scratch = await scratchPostgresDatabase()
    db = await openPostgres({ connectionString: scratch.url, max: 6 })
    await migrate(db)
  })
  after(async () => {
    await db?.close()
    await scratch?.drop()
  })

  async function addRecording(n: number, audioId: string): Promise<void> {
    await db.query(
      `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
       VALUES ($1, $2, 'd', 't', now(), 'https://a/1.mp3', 1)`,
      [audioId, n],
    )
  }

  /** An enterprise with a recording and an endpoint to `url`, each test its own. */
  async function seed(
    n: number,
    url = `http://partner-${n}.test/push`,
  ): Promise<{ endpointId: number; audioId: string }> {
    const audioId = `rec-${n}`
    await db.query(`INSERT INTO enterprises (enterprise_id, name) VALUES ($1, 'E')`, [n])
    await addRecording(n, audioId)
    const [row] = await db.query<{ endpoint_id: number }>(
      `INSERT INTO endpoints (enterprise_id, url, event_types) VALUES ($1, $2, $3) RETURNING endpoint_id`,
      [n, url, ALL_TYPES],
    )
    return { endpointId: Number(row?.endpoint_id), audioId }
  }

  async function insertDelivery(
    n: number,
    endpointId: number,
    audioId: string,
    state: 'in_flight' | 'queued',
  ): Promise<number> {
    const [row] = await db.query<{ delivery_id: number }>(
      `INSERT INTO deliveries (event_id, enterprise_id, endpoint_id, audio_id, event_type, state, due_at, group_key,
                               claim_no, claimed_by)
       VALUES (gen_random_uuid()::text, $1, $2, $3, 'recording.updated', $4::text,
               CASE WHEN $4::text = 'in_flight' THEN now() + interval '1 minute' END, $5,
               CASE WHEN $4::text = 'in_flight' THEN 1 ELSE 0 END, CASE WHEN $4::text = 'in_flight' THEN 'instance' END)
       RETURNING delivery_id`,
      [n, endpointId, audioId, state, String(endpointId)],
    )
    return Number(row?.delivery_id)
  }

  const stateOf = async (deliveryId: number) =>
    (
      await db.query<{ state: string }>('SELECT state FROM deliveries WHERE delivery_id = $1', [deliveryId])
    )[0]?.state

  /** A transaction that runs `first`, then stays open until `commit` is called. */
  function openTransaction<T>(first: (tx: Queryable) => Promise<T>) {
    const ran = latch()
    const gate = latch()
    let result: T | undefined
    const done = db.transaction(async (tx) => {
      result = await first(tx)
      ran.signal()
      await gate.done
    })
    // Should `first` fail, `ran` never comes: the failure ends the wait instead.
    const started = Promise.race([ran.done, done])
    return { started, commit: gate.signal, done, result: () => result }
  }

  /**
   * A transaction run a step at a time: each `step` runs in it once the previous one ended; `commit` ends it
   * (rolled back when a step failed).
   */
  function session() {
    const steps: {
      run: (tx: Queryable) => Promise<unknown>
      settle: (error: unknown, value?: unknown) => void
    }[] = []
    let wake: (() => void) | undefined
    let closing = false
    const done = db.transaction(async (tx) => {
      for (;;) {
        while (steps.length === 0 && !closing) await new Promise<void>((resolve) => (wake = resolve))
        const next = steps.shift()
        if (next === undefined) return
        try {
          next.settle(undefined, await next.run(tx))
        } catch (error) {
          next.settle(error)
          throw error
        }
      }
    })
    done.catch(() => {})
    return {
      step<T>(run: (tx: Queryable) => Promise<T>): Promise<T> {
        return new Promise<T>((resolve, reject) => {
          steps.push({ run, settle: (error, value) => (error ? reject(error) : resolve(value as T)) })
          wake?.()
        })
      },
      commit(): Promise<void> {
        closing = true
        wake?.()
        return done
      },
    }
  }

  /** Waits until `count` backends of this database wait for a lock. */
  async function lockWaiters(count: number, what: string): Promise<void> {
    await eventually(
      async () => {
        const [row] = await db.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
        return (row?.waiting ?? 0) >= count
      },
      10_000,
      what,
    )
  }

  /** The reasons of those rejected (a deadlock's victim), for an assertion that there are none. */
  async function failures(...statements: Promise<unknown>[]): Promise<string[]> {
    const results = await Promise.allSettled(statements)
    return results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : []))
  }

  /**
   * Waits until `statement` either waits for a lock (a backend of this database waiting on one) or ends;
   * true when it waits.
   */
  async function waitsForLock(statement: Promise<unknown>, what: string): Promise<boolean> {
    let ended = false
    const ending = statement.then(
      () => {
        ended = true
      },
      () => {
        ended = true
      },
    )
    await eventually(
      async () => {
        if (ended) return true
        const [row] = await db.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
        return (row?.waiting ?? 0) > 0
      },
      10_000,
      what,
    )
    void ending
    return !ended
  }

  test('finding 1: two earlier deliveries finished by overlapping transactions let the queued one go', async () => {
    const { endpointId, audioId } = await seed(1)
    const first = await insertDelivery(1, endpointId, audioId, 'in_flight')
    const second = await insertDelivery(1, endpointId, audioId, 'in_flight')
    const queued = await insertDelivery(1, endpointId, audioId, 'queued')
    const acked = (deliveryId: number) => async (tx: Queryable) =>
      tx.query(
        `UPDATE deliveries SET state = 'acked', due_at = now() + interval '1 hour', claimed_by = NULL
          WHERE delivery_id = $1`,
        [deliveryId],
      )
    const tx1 = openTransaction(acked(first))
    await tx1.started
    const tx2 = db.transaction(acked(second))
    let waited: boolean
    try {
      waited = await waitsForLock(tx2, 'the second ack to wait for the first, or to end')
    } finally {
      tx1.commit()
      await tx1.done
    }
    await tx2
    // Neither could tell: the second, finding the first's lock taken, did not wait for it but marked the pair.
    assert.ok(!waited, "the second ack's promotion waited for the first's transaction")
    assert.equal(await stateOf(queued), 'queued')
    await deliveryQueue.repair(db)
    assert.equal(await stateOf(queued), 'pending', 'the third delivery was left queued behind two done')
  })

  test('finding 2: scheduling while an endpoint is being removed creates nothing for it', async () => {
    const { endpointId, audioId } = await seed(2)
    const removal = openTransaction((tx) => removeEndpointIn(tx, 2, endpointId))
    await removal.started
    const scheduling = db.transaction((tx) =>
      scheduleDeliveries(tx, 2, [{ audioId, eventType: PushEventType.UPDATED }]),
    )
    let waited: boolean
    try {
      waited = await waitsForLock(scheduling, 'scheduling to wait for the removal, or to end')
    } finally {
      removal.commit()
      await removal.done
    }
    await scheduling
    const rows = await db.query<{ state: string }>(
      `SELECT state FROM deliveries WHERE endpoint_id = $1 AND state <> 'cancelled'`,
      [endpointId],
    )
    assert.deepEqual(rows, [], 'a delivery to the removed endpoint was created')
    assert.ok(waited, 'scheduling did not wait for the removal')
  })

  async function disableUrl(url: string): Promise<void> {
    await db.query(
      `INSERT INTO push_url_health (url, consecutive_failures, failing_since, last_failure_at, disabled_at, disabled_reason)
       VALUES ($1, 3, now() - interval '1 hour', now(), now(), 'test')`,
      [url],
    )
  }

  test('finding 3: a delivery scheduled held while its URL is being enabled is resumed', async () => {
    const url = 'http://partner-3.test/push'
    const { audioId } = await seed(3, url)
    await disableUrl(url)
    const scheduling = openTransaction(async (tx) => {
      await scheduleDeliveries(tx, 3, [{ audioId, eventType: PushEventType.UPDATED }])
      return (await tx.query<{ state: string }>('SELECT state FROM deliveries WHERE enterprise_id = 3'))[0]
    })
    await scheduling.started
    assert.equal(scheduling.result()?.state, 'held')
    const enabling = enablePushUrl(db, url)
    let waited: boolean
    try {
      waited = await waitsForLock(enabling, 'enabling to wait for the scheduling, or to end')
    } finally {
      scheduling.commit()
      await scheduling.done
    }
    await enabling
    const rows = await db.query<{ state: string }>('SELECT state FROM deliveries WHERE enterprise_id = 3')
    assert.deepEqual(rows, [{ state: 'pending' }], 'the delivery was left held on a healthy URL')
    assert.ok(waited, 'enabling did not wait for the scheduling')
  })

  test("finding 3: a sweep holding a delivery while its URL is being enabled leaves it to the enable's resume", async () => {
    const url = 'http://partner-4.test/push'
    const { endpointId, audioId } = await seed(4, url)
    // Scheduled while the URL was healthy; the URL is disabled since, and the sweep has not held it yet.
    await db.transaction((tx) => scheduleDeliveries(tx, 4, [{ audioId, eventType: PushEventType.UPDATED }]))
    await disableUrl(url)
    const sweep = openTransaction((tx) => deliveryQueue.sweep(tx, 100))
    await sweep.started
    const enabling = enablePushUrl(db, url)
    let waited: boolean
    try {
      waited = await waitsForLock(enabling, 'enabling to wait for the sweep, or to end')
    } finally {
      sweep.commit()
      await sweep.done
    }
    await enabling
    const rows = await db.query<{ state: string }>('SELECT state FROM deliveries WHERE endpoint_id = $1', [
      endpointId,
    ])
    assert.deepEqual(rows, [{ state: 'pending' }], 'the delivery was left held on a healthy URL')
    assert.ok(waited, 'enabling did not wait for the sweep')
  })

  test('finding 3: an endpoint enabled while a delivery is scheduled held for it resumes that delivery', async () => {
    const { endpointId, audioId } = await seed(5)
    await db.query('UPDATE endpoints SET enabled = false WHERE endpoint_id = $1', [endpointId])
    const scheduling = openTransaction((tx) =>
      scheduleDeliveries(tx, 5, [{ audioId, eventType: PushEventType.UPDATED }]),
    )
    await scheduling.started
    const enabling = updateEndpoint(db, 5, endpointId, { enabled: true })
    let waited: boolean
    try {
      waited = await waitsForLock(enabling, 'enabling to wait for the scheduling, or to end')
    } finally {
      scheduling.commit()
      await scheduling.done
    }
    await enabling
    const rows = await db.query<{ state: string }>('SELECT state FROM deliveries WHERE endpoint_id = $1', [
      endpointId,
    ])
    assert.deepEqual(rows, [{ state: 'pending' }], 'the delivery was not scheduled, or left held')
    assert.ok(waited, 'enabling did not wait for the scheduling')
  })

  /** The dispatcher's batch write of an ack of the in-flight delivery given (claim 1 of 'instance'). */
  const ackOf = (deliveryId: number) => (tx: Queryable) =>
    deliveryQueue.settle(tx, [
      {
        id: deliveryId,
        fence: { claimant: 'instance', claimNo: 1 },
        next: { state: 'acked', delaySeconds: 60 },
        attempt: { outcome: 'acked', startedAt: Date.now(), durationMs: 1 },
      },
    ])

  test('issue 41 review 1: two batches finishing deliveries of two recordings crosswise do not deadlock', async () => {
    const { endpointId, audioId: x } = await seed(6)
    const y = 'rec-6-y'
    await addRecording(6, y)
    const [x1, y2, x4, y5] = [
      await insertDelivery(6, endpointId, x, 'in_flight'),
      await insertDelivery(6, endpointId, y, 'in_flight'),
      await insertDelivery(6, endpointId, x, 'in_flight'),
      await insertDelivery(6, endpointId, y, 'in_flight'),
    ] as [number, number, number, number]
    const xQueued = await insertDelivery(6, endpointId, x, 'queued')
    const yQueued = await insertDelivery(6, endpointId, y, 'queued')
    // Each batch's promotion sees the other's delivery of the same recording still open, in turn.
    const t1 = session()
    const t2 = session()
    await t1.step(ackOf(x1))
    await t2.step(ackOf(y2))
    const t1Second = t1.step(ackOf(y5))
    await waitsForLock(t1Second, "the first batch's second write to wait, or to end")
    const t2Second = t2.step(ackOf(x4))
    const failed = await failures(t1Second, t2Second)
    failed.push(...(await failures(t1.commit(), t2.commit())))
    assert.deepEqual([...new Set(failed)], [], 'a batch was cancelled')
    await deliveryQueue.repair(db)
    assert.deepEqual(
      [await stateOf(xQueued), await stateOf(yQueued)],
      ['pending', 'pending'],
      'a delivery was left queued behind two done',
    )
  })

  test("issue 41 review 2: a recording's deletion while its endpoint is being removed does not deadlock", async () => {
    const { endpointId, audioId } = await seed(7)
    const open = await insertDelivery(7, endpointId, audioId, 'in_flight')
    const removal = session()
    // The removal's first statement: the endpoint locked.
    await removal.step((tx) =>
      tx.query('SELECT 1 FROM endpoints WHERE endpoint_id = $1 FOR UPDATE', [endpointId]),
    )
    const deletion = session()
    const announced = deletion.step((tx) =>
      deliveriesOfRecordings.announce(tx, 7, [{ audioId, eventType: PushEventType.DELETED }]),
    )
    await lockWaiters(1, 'the deletion to wait for the removal')
    const removed = removal.step((tx) => removeEndpointIn(tx, 7, endpointId))
    const failed = await failures(removed, removal.commit(), announced, deletion.commit())
    assert.deepEqual([...new Set(failed)], [], 'the removal or the deletion was cancelled')
    assert.equal(await stateOf(open), 'cancelled')
    const rows = await db.query('SELECT 1 FROM deliveries WHERE endpoint_id = $1 AND state <> $2', [
      endpointId,
      'cancelled',
    ])
    assert.deepEqual(rows, [], 'a delivery to the removed endpoint was left open')
  })

  test("issue 41 review 2: a recording's deletion while its push URL is being enabled does not deadlock", async () => {
    const url = 'http://partner-8.test/push'
    const { endpointId, audioId } = await seed(8, url)
    const failedOne = await insertDelivery(8, endpointId, audioId, 'in_flight')
    await db.query(
      `UPDATE deliveries SET state = 'failed', due_at = NULL, failed_at = now() WHERE delivery_id = $1`,
      [failedOne],
    )
    await disableUrl(url)
    const enabling = session()
    // The enable's first statement: the URL's row locked; then it replays what failed (enablePushUrl).
    await enabling.step((tx) => tx.query('SELECT 1 FROM push_url_health WHERE url = $1 FOR UPDATE', [url]))
    const deletion = session()
    const announced = deletion.step((tx) =>
      deliveriesOfRecordings.announce(tx, 8, [{ audioId, eventType: PushEventType.DELETED }]),
    )
    await lockWaiters(1, 'the deletion to wait for the enable')
    const replayed = enabling.step((tx) => replayFailedSince(tx, [endpointId], Date.now() - 3_600_000))
    const failed = await failures(replayed, enabling.commit(), announced, deletion.commit())
    assert.deepEqual([...new Set(failed)], [], 'the enable or the deletion was cancelled')
  })

  test('issue 41 review 3: scheduling while set-push-url replaces the endpoints does not deadlock', async () => {
    const { endpointId, audioId } = await seed(9)
    const earlier = await insertDelivery(9, endpointId, audioId, 'in_flight')
    // Holding the earlier delivery keeps the scheduling between its endpoints' lock and its insert.
    const holder = session()
    await holder.step((tx) =>
      tx.query('SELECT 1 FROM deliveries WHERE delivery_id = $1 FOR UPDATE', [earlier]),
    )
    const scheduling = db.transaction((tx) =>
      scheduleDeliveries(tx, 9, [{ audioId, eventType: PushEventType.UPDATED }]),
    )
    await lockWaiters(1, 'the scheduling to wait for the earlier delivery')
    const replacing = replaceWithPushUrl(db, 9, 'http://partner-9.test/other')
    await lockWaiters(2, 'set-push-url to wait for the scheduling')
    const failed = await failures(holder.commit(), scheduling, replacing)
    assert.deepEqual([...new Set(failed)], [], 'the scheduling or set-push-url was cancelled')
    const rows = await db.query<{ state: string }>(
      `SELECT state FROM deliveries WHERE endpoint_id = $1 AND delivery_id <> $2`,
      [endpointId, earlier],
    )
    assert.deepEqual(rows, [{ state: 'queued' }], 'the update was not scheduled behind the earlier delivery')
  })

  test('issue 41 review 4: a sweep with nothing to hold locks no paused endpoint or push URL', async () => {
    const url = 'http://partner-10.test/push'
    const { endpointId } = await seed(10, url)
    await db.query('UPDATE endpoints SET enabled = false WHERE endpoint_id = $1', [endpointId])
    await disableUrl(url)
    const xmax = async () =>
      db.query<{ endpoint: string; url: string }>(
        `SELECT ep.xmax::text AS endpoint, h.xmax::text AS url
           FROM endpoints ep JOIN push_url_health h ON h.url = ep.url WHERE ep.endpoint_id = $1`,
        [endpointId],
      )
    const before = await xmax()
    await deliveryQueue.sweep(db, 100)
    assert.deepEqual(await xmax(), before, 'the sweep wrote a row lock')
  })

  test('issue 41 review 5: the repair finds a marked delivery however long a paused backlog queued before it', async () => {
    const { endpointId: paused, audioId } = await seed(11)
    await db.query('UPDATE endpoints SET enabled = false WHERE endpoint_id = $1', [paused])
    await db.query(
      `INSERT INTO deliveries (event_id, enterprise_id, endpoint_id, audio_id, event_type, state, group_key, due_at)
       SELECT gen_random_uuid()::text, 11, $1::int8, $2, 'recording.updated', CASE WHEN n = 1 THEN 'held' ELSE 'queued' END,
              $1::int8::text, CASE WHEN n = 1 THEN now() END
         FROM generate_series(1, 500) AS n ORDER BY n`,
      [paused, audioId],
    )
    const [other] = await db.query<{ endpoint_id: number }>(
      `INSERT INTO endpoints (enterprise_id, url, event_types) VALUES (11, 'http://partner-11.test/other', $1)
       RETURNING endpoint_id`,
      [ALL_TYPES],
    )
    const otherId = Number(other?.endpoint_id)
    const stranded = await insertDelivery(11, otherId, audioId, 'queued')
    await db.query('INSERT INTO delivery_rechecks (endpoint_id, audio_id) VALUES ($1, $2)', [
      otherId,
      audioId,
    ])
    await deliveryQueue.repair(db)
    assert.equal(await stateOf(stranded), 'pending', 'the stranded delivery was not found by one repair')
  })
})
