import { sqlList } from '@earshot/support/queue'
import type { Queryable } from '../storage/database.js'
import { CANCELLABLE_STATES } from './delivery-states.js'

/**
 * Cancels every delivery of a recording not yet confirmed, as its deletion does; returns how many. An
 * attempt in flight then moves nothing (its claim is no longer current), but it may still be on the wire
 * until its lease ends: what follows it to its endpoint waits for that (scheduleDeliveries).
 */
export async function cancelDeliveries(tx: Queryable, audioId: string): Promise<number> {
  return cancelWhere(tx, 'audio_id = $1', [audioId])
}

/** Cancels every delivery to an endpoint not yet confirmed, as its removal does; returns how many. */
export async function cancelEndpointDeliveries(tx: Queryable, endpointId: number): Promise<number> {
  return cancelWhere(tx, 'endpoint_id = $1', [endpointId])
}

/**
 * Cancels an endpoint's held deliveries and those queued behind them (enabling it with `--discard-held`);
 * returns how many. Call it in the transaction that locked the endpoint's row.
 */
export async function discardHeldDeliveries(tx: Queryable, endpointId: number): Promise<number> {
  return cancelWhere(
    tx,
    `endpoint_id = $1 AND (state = 'held' OR state = 'queued' AND EXISTS (
       SELECT 1 FROM deliveries h WHERE h.group_key = $1::text AND h.state = 'held'
                                    AND h.audio_id = deliveries.audio_id AND h.delivery_id < deliveries.delivery_id))`,
    [endpointId],
  )
}

/**
 * Cancels one delivery not yet confirmed, by an operator; true when it did. A delivery queued behind it then
 * goes when nothing else of its recording to its endpoint is open (sql/000020.sql).
 */
export async function cancelDelivery(db: Queryable, deliveryId: number): Promise<boolean> {
  return (await cancelWhere(db, 'delivery_id = $1', [deliveryId])) === 1
}

async function cancelWhere(tx: Queryable, selection: string, params: unknown[]): Promise<number> {
  const [row] = await tx.query<{ cancelled: number }>(
    `WITH chosen AS (
       SELECT delivery_id FROM deliveries WHERE ${selection} AND state IN (${sqlList(CANCELLABLE_STATES)})
        ORDER BY delivery_id FOR NO KEY UPDATE),
     cancelled AS (
       UPDATE deliveries d SET state = 'cancelled', due_at = NULL, claimed_by = NULL,
                               wire_until = CASE WHEN d.state = 'in_flight' THEN d.due_at END
         FROM chosen WHERE d.delivery_id = chosen.delivery_id
       RETURNING 1)
     SELECT count(*) AS cancelled FROM cancelled`,
    params,
  )
  return row?.cancelled ?? 0
}
