import { sqlList } from '@earshot/support/queue'
import type { Queryable } from '../storage/database.js'
import { type DeliveryState, RANGE_REPLAYABLE_STATES, REPLAYABLE_STATES } from './delivery-states.js'
import { deliveryQueue, WIRE_WAIT } from './delivery-store.js'

/* Putting deliveries back to pending: operators' replays, an enabled or recovered URL's replay, resuming held ones. */

const RANGE_SELECTION =
  'enterprise_id = $1 AND created_at >= $2::timestamptz AND created_at < $3::timestamptz AND state = ANY ($4::text[])'

/** A range replay: an enterprise's deliveries created in [from, to), of the states given (default: every one a range replay takes). */
export interface ReplayRange {
  enterpriseId: number
  from: string
  to: string
  states?: readonly DeliveryState[] | undefined
}

/** The deliveries an enterprise's range replay would put back to pending now (a dry run of it). */
export async function countReplayable(db: Queryable, selection: ReplayRange): Promise<number> {
  const [row] = await db.query<{ replayable: number }>(
    `SELECT count(*) AS replayable FROM deliveries
      WHERE state IN (${sqlList(RANGE_REPLAYABLE_STATES)})
        AND ${RANGE_SELECTION}`,
    rangeParams(selection),
  )
  return row?.replayable ?? 0
}

/**
 * Puts failed or unconfirmed deliveries back to `pending`, due now, with a fresh retry schedule and
 * re-push allowance; returns how many. One delivery queued behind an earlier event of its recording may be
 * replayed too (pushed ahead of it, but not while an attempt of an earlier one cancelled in flight may still
 * be on the wire); a range replay leaves queued ones to their turn. Same eventId: the
 * partner dedups. Rows are locked in id order, as the push queue and receipts lock them.
 */
export async function replayDeliveries(
  db: Queryable,
  selection: { deliveryId: number } | ReplayRange,
): Promise<number> {
  let replayed = 0
  // A range a batch per statement: on the embedded database each statement holds the one connection.
  for (let batch = REPLAY_BATCH; batch === REPLAY_BATCH; replayed += batch) {
    const [row] = await db.query<{ replayed: number }>(
      `WITH chosen AS (
         SELECT delivery_id FROM deliveries
          WHERE ${
            'deliveryId' in selection
              ? `state IN (${sqlList(REPLAYABLE_STATES)}) AND delivery_id = $1`
              : `state IN (${sqlList(RANGE_REPLAYABLE_STATES)}) AND ${RANGE_SELECTION}`
          }
          ORDER BY delivery_id LIMIT ${REPLAY_BATCH} FOR NO KEY UPDATE),
       replayed AS (
         UPDATE deliveries d SET state = 'pending', failures = 0, acks = least(acks, 1),
                                 due_at = CASE WHEN d.state = 'queued' THEN greatest(now(), ${WIRE_WAIT('d')}) ELSE now() END
           FROM chosen WHERE d.delivery_id = chosen.delivery_id
         RETURNING 1)
       SELECT count(*) AS replayed FROM replayed`,
      'deliveryId' in selection ? [selection.deliveryId] : rangeParams(selection),
    )
    batch = row?.replayed ?? 0
  }
  if (replayed > 0) await deliveryQueue.notify(db)
  return replayed
}

/** Deliveries a range replay puts back per statement. */
const REPLAY_BATCH = 1000

function rangeParams({ enterpriseId, from, to, states }: ReplayRange) {
  return [enterpriseId, from, to, states ?? RANGE_REPLAYABLE_STATES]
}

/** Deliveries put back per statement: on the embedded database each statement holds the one connection. */
const RESUME_BATCH = 1000

/**
 * Puts back to `pending`, in due order and a batch per statement, the deliveries the endpoints given held
 * while they or their push URL were disabled; those still paused stay held. Returns how many.
 */
/** How many deliveries to these endpoints are held now. */
export async function countHeld(db: Queryable, endpointIds: readonly number[]): Promise<number> {
  const [row] = await db.query<{ held: number }>(
    `SELECT count(*)::int AS held FROM deliveries WHERE state = 'held' AND group_key = ANY($1::text[])`,
    [endpointIds.map(String)],
  )
  return row?.held ?? 0
}

export async function resumeHeld(db: Queryable, endpointIds: readonly number[]): Promise<number> {
  const groups = endpointIds.map(String)
  let resumed = 0
  for (let batch = RESUME_BATCH; batch === RESUME_BATCH; resumed += batch) {
    batch = await deliveryQueue.resume(db, groups, RESUME_BATCH)
  }
  return resumed
}

/**
 * Puts back to `pending`, due now with a fresh retry schedule and a batch per statement, the deliveries to
 * the endpoints given that went failed at or after sinceMs (epoch ms), as enabling their push URL does;
 * returns how many.
 */
export async function replayFailedSince(
  db: Queryable,
  endpointIds: readonly number[],
  sinceMs: number,
): Promise<number> {
  const replayed = await replayFailedSinceEach(
    db,
    endpointIds.map((endpointId) => ({ endpointId, sinceMs })),
  )
  return [...replayed.values()].reduce((sum, n) => sum + n, 0)
}

/**
 * replayFailedSince with a time for each endpoint, as push URLs recovering together replay theirs: in one
 * id order across them all (the lock order), not URL by URL. Returns how many for each endpoint.
 */
export async function replayFailedSinceEach(
  db: Queryable,
  endpoints: readonly { endpointId: number; sinceMs: number }[],
): Promise<Map<number, number>> {
  const replayed = new Map<number, number>()
  for (let batch = RESUME_BATCH; batch === RESUME_BATCH; ) {
    const rows = await db.query<{ endpoint_id: number; replayed: number }>(
      `WITH chosen AS (
         SELECT d.delivery_id FROM deliveries d
           JOIN unnest($1::int8[], $2::float8[]) AS s(endpoint_id, since_ms) ON s.endpoint_id = d.endpoint_id
          WHERE d.state = 'failed' AND d.failed_at >= to_timestamp(s.since_ms / 1000)
          ORDER BY d.delivery_id LIMIT $3 FOR NO KEY UPDATE OF d),
       replayed AS (
         UPDATE deliveries d SET state = 'pending', due_at = now(), failures = 0, acks = least(acks, 1)
           FROM chosen WHERE d.delivery_id = chosen.delivery_id
         RETURNING d.endpoint_id)
       SELECT endpoint_id, count(*)::int AS replayed FROM replayed GROUP BY endpoint_id`,
      [endpoints.map((e) => e.endpointId), endpoints.map((e) => e.sinceMs), RESUME_BATCH],
    )
    batch = 0
    for (const row of rows) {
      const endpointId = Number(row.endpoint_id)
      replayed.set(endpointId, (replayed.get(endpointId) ?? 0) + Number(row.replayed))
      batch += Number(row.replayed)
    }
  }
  if (replayed.size > 0) await deliveryQueue.notify(db)
  return replayed
}
