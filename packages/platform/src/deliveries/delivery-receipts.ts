import { PushEventType } from '@earshot/protocol'
import { batcher } from '@earshot/support/batcher'
import { sqlList } from '@earshot/support/queue'
import { deliveryMachine, RECEIPT_STATES } from '../deliveries/delivery-states.js'
import { type Queryable, queryOnGenericPlan } from '../storage/database.js'

/** A receipt callback: the partner says it has the recording audioId of its enterprise. */
export interface Receipt {
  enterpriseId: number
  audioId: string
}

/**
 * Records the partner's receipts of recordings, any number in one statement: confirms
 * the deliveries of each the partner has acknowledged (an ack recorded, in a state a receipt confirms
 * from), and stamps the receipt's time on those in flight, so that one is confirmed when its ack is
 * recorded (deliveryQueue's settle). One not yet claimed is left untouched: its claim will come after
 * the receipt, which therefore cannot confirm it. Deliveries never acknowledged are left to
 * be pushed as scheduled. Idempotent; for each receipt, false when its audioId is not a recording of
 * its enterprise — another enterprise's id looks the same as none.
 */
export async function confirmReceipts(db: Queryable, receipts: readonly Receipt[]): Promise<boolean[]> {
  // The deliveries' own rows carry both facts: a concurrent ack being recorded takes the same row lock,
  // and whichever statement comes second re-reads the row (an ack then sees received_at, this sees acks).
  // Rows are locked in one order (receipts by audioId, deliveries by id, as the push queue locks them),
  // so that two statements over overlapping rows wait for each other rather than deadlock. A receipt that
  // waited for the ack's lock began before the ack's transaction did: its now() is the earlier, so the
  // confirmation is stamped no earlier than the ack.
  // A deleted recording is still the partner's to confirm when the partner had it: a push of its data was
  // acknowledged (an attempt's ack is recorded even when the deletion had made its claim stale), or a
  // receipt for it came before the deletion. The deletion's own push, or a push that never got an answer,
  // tells nothing: another enterprise's audioId, or one the partner never received, looks the same.
  // On a generic plan, which runs as fast: PostgreSQL otherwise planned it at most calls, as a generic plan's
  // guess at the arrays' lengths looks worse than the plans made for batches of a few.
  const rows = await queryOnGenericPlan<{ enterprise_id: number; audio_id: string }>(
    db,
    `WITH asked AS (SELECT DISTINCT e, a FROM unnest($1::int8[], $2::text[]) AS u(e, a)),
          owned AS (SELECT r.audio_id, r.enterprise_id
                      FROM recordings r JOIN asked ON r.audio_id = asked.a AND r.enterprise_id = asked.e
                    UNION ALL
                    SELECT t.audio_id, t.enterprise_id
                      FROM recording_tombstones t JOIN asked ON t.audio_id = asked.a AND t.enterprise_id = asked.e
                     WHERE ${partnerHadSql('t')}),
          added AS (INSERT INTO receipts (audio_id, enterprise_id)
                    SELECT audio_id, enterprise_id FROM owned ORDER BY audio_id
                    ON CONFLICT (audio_id) DO NOTHING),
          touched AS (UPDATE deliveries d
                         SET received_at = now(),
                             state = CASE WHEN d.acks > 0 THEN 'confirmed' ELSE d.state END,
                             due_at = CASE WHEN d.acks > 0 THEN NULL ELSE d.due_at END,
                             claimed_by = CASE WHEN d.acks > 0 THEN NULL ELSE d.claimed_by END,
                             confirmed_at = CASE WHEN d.acks > 0 THEN greatest(now(), d.acked_at) ELSE d.confirmed_at END
                        FROM (SELECT delivery_id FROM deliveries
                               WHERE audio_id IN (SELECT audio_id FROM owned) AND state IN (${sqlList(RECEIPT_STATES)})
                                 AND (acks > 0 OR state = '${deliveryMachine.claimed}')
                               ORDER BY delivery_id FOR NO KEY UPDATE) AS open
                       WHERE d.delivery_id = open.delivery_id)
     SELECT enterprise_id, audio_id FROM owned`,
    [receipts.map((receipt) => receipt.enterpriseId), receipts.map((receipt) => receipt.audioId)],
  )
  const owned = new Set(rows.map((row) => `${row.enterprise_id}:${row.audio_id}`))
  return receipts.map((receipt) => owned.has(`${receipt.enterpriseId}:${receipt.audioId}`))
}

/**
 * Whether the partner had the deleted recording of tombstone row `t`: a push of its data was acknowledged
 * (an attempt's ack is recorded even when the deletion had made its claim stale), or a receipt for it came
 * before the deletion.
 */
export function partnerHadSql(t: string): string {
  return `(EXISTS (SELECT 1 FROM receipts WHERE audio_id = ${t}.audio_id AND confirmed_at <= ${t}.deleted_at)
           OR EXISTS (SELECT 1 FROM deliveries d
                       WHERE d.audio_id = ${t}.audio_id AND d.event_type <> '${PushEventType.DELETED}'
                         AND (d.acks > 0 OR EXISTS (SELECT 1 FROM delivery_attempts a
                                                     WHERE a.delivery_id = d.delivery_id AND a.outcome = 'acked'))))`
}

const DEADLOCK_DETECTED = '40P01'

/**
 * Group commit of receipt callbacks: those in flight are recorded by one statement per turn of the event
 * loop, each answered once it has committed. One batch at a time, so that this instance's statements
 * never wait for each other.
 */
export function receiptBatcher(db: Queryable): (receipt: Receipt) => Promise<boolean> {
  return batcher(
    async (receipts: Receipt[]) => {
      try {
        return await confirmReceipts(db, receipts)
      } catch (error) {
        // Locks are taken in one order, but another instance's concurrent ack or receipt of the same
        // recordings may still meet ours in a cycle; PostgreSQL then cancels one. Each alone cannot.
        if ((error as { code?: string }).code !== DEADLOCK_DETECTED || receipts.length === 1) throw error
        const results: boolean[] = []
        for (const receipt of receipts) results.push(...(await confirmReceipts(db, [receipt])))
        return results
      }
    },
    { maxBatch: 256 },
  )
}
