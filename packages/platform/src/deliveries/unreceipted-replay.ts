import { sqlList } from '@earshot/support/queue'
import type { Queryable } from '../storage/database.js'
import { type DeliveryState, deliveryMachine } from './delivery-states.js'
import { deliveryQueue } from './delivery-store.js'

/** Never receipted and not being pushed: acknowledged and waiting for a receipt, failed, unconfirmed. */
export const UNRECEIPTED_REPLAY_STATES: readonly DeliveryState[] =
  deliveryMachine.sources('unreceipted_replay')

/** Going to be pushed anyway: waiting for an attempt, or being attempted. */
const SCHEDULED_STATES: readonly DeliveryState[] = [deliveryMachine.ready, deliveryMachine.claimed]

export interface UnreceiptedCount {
  /** Deliveries an unreceipted replay puts back to pending. */
  replayable: number
  /** Deliveries pending or in flight: left as they are. */
  alreadyScheduled: number
}

/** The deliveries of enterprise $1 created at or after $2 in the states given. */
const countSql = (states: readonly DeliveryState[]) =>
  `SELECT count(*) FROM deliveries WHERE enterprise_id = $1 AND created_at >= $2::timestamptz
      AND state IN (${sqlList(states)})`
const countScheduledSql = countSql(SCHEDULED_STATES)

/** What replayUnreceipted would do now, for an operator to confirm. */
export async function countUnreceipted(
  db: Queryable,
  enterpriseId: number,
  since: string,
): Promise<UnreceiptedCount> {
  const [row] = await db.query<UnreceiptedCount>(
    `SELECT (${countSql(UNRECEIPTED_REPLAY_STATES)}) AS replayable, (${countScheduledSql}) AS "alreadyScheduled"`,
    [enterpriseId, since],
  )
  return { replayable: row?.replayable ?? 0, alreadyScheduled: row?.alreadyScheduled ?? 0 }
}

/**
 * Pushes again every delivery of the enterprise created at or after `since` that the partner never
 * receipted: acked, failed and unconfirmed ones go back to pending, due now, with a fresh retry schedule
 * and re-push allowance and the same eventId (the partner dedups). Pending and in-flight ones are pushed
 * anyway and are left alone; confirmed and cancelled ones are done. Rows are locked in id order, as the
 * push queue and receipts lock them.
 */
export async function replayUnreceipted(
  db: Queryable,
  enterpriseId: number,
  since: string,
): Promise<{ replayed: number; alreadyScheduled: number }> {
  const [row] = await db.query<{ replayed: number; alreadyScheduled: number }>(
    `WITH chosen AS (
       SELECT delivery_id FROM deliveries
        WHERE enterprise_id = $1 AND created_at >= $2::timestamptz
          AND state IN (${sqlList(UNRECEIPTED_REPLAY_STATES)})
        ORDER BY delivery_id FOR NO KEY UPDATE),
     replayed AS (
       UPDATE deliveries d SET state = 'pending', due_at = now(), failures = 0, acks = least(acks, 1)
         FROM chosen WHERE d.delivery_id = chosen.delivery_id
       RETURNING 1)
     SELECT (SELECT count(*) FROM replayed) AS replayed, (${countScheduledSql}) AS "alreadyScheduled"`,
    [enterpriseId, since],
  )
  const replayed = row?.replayed ?? 0
  if (replayed > 0) await deliveryQueue.notify(db)
  return { replayed, alreadyScheduled: row?.alreadyScheduled ?? 0 }
}
