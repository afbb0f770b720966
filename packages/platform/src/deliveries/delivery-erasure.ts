import { PushEventType } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'
import { partnerHadSql } from './delivery-receipts.js'

/*
 * What an erasure asks of the deliveries: forgetting what receivers answered to the pushes of erased
 * recordings, the state of each endpoint's deletion push, and which recordings the partner had.
 */

/** Drops the answers kept from receivers for every attempt of these recordings' deliveries; returns how many. */
export async function forgetAttemptAnswers(tx: Queryable, audioIds: readonly string[]): Promise<number> {
  const [row] = await tx.query<{ n: number }>(
    `WITH forgotten AS (
       UPDATE delivery_attempts a SET answer = NULL
         FROM deliveries d
        WHERE d.audio_id = ANY($1::text[]) AND a.delivery_id = d.delivery_id AND a.answer IS NOT NULL
       RETURNING 1)
     SELECT count(*)::int AS n FROM forgotten`,
    [audioIds],
  )
  return row?.n ?? 0
}

export interface DeletionPush {
  endpointId: number
  audioId: string
  /** Its receiver answered it with an ack (a deletion is confirmed by its ack). */
  acknowledged: boolean
  /** Its endpoint was removed since: nobody is left there to acknowledge it. */
  removed: boolean
}

/** Each endpoint's `recording.deleted` delivery of these recordings (the acknowledged one, if several). */
export async function deletionPushes(tx: Queryable, audioIds: readonly string[]): Promise<DeletionPush[]> {
  return tx.query<DeletionPush>(
    `SELECT DISTINCT ON (d.endpoint_id, d.audio_id) d.endpoint_id AS "endpointId", d.audio_id AS "audioId",
            (d.acks > 0 OR d.state = 'confirmed') AS acknowledged, e.removed_at IS NOT NULL AS removed
       FROM deliveries d JOIN endpoints e ON e.endpoint_id = d.endpoint_id
      WHERE d.audio_id = ANY($1::text[]) AND d.event_type = '${PushEventType.DELETED}'
      ORDER BY d.endpoint_id, d.audio_id, (d.acks > 0 OR d.state = 'confirmed') DESC`,
    [audioIds],
  )
}

/**
 * Of these deleted recordings, those the partner had: a push of its data was acknowledged, or a receipt
 * for it came before the deletion (as the receipt callback judges a deleted recording).
 */
export async function recordingsThePartnerHad(
  tx: Queryable,
  enterpriseId: number,
  audioIds: readonly string[],
): Promise<Set<string>> {
  const rows = await tx.query<{ audio_id: string }>(
    `SELECT t.audio_id FROM recording_tombstones t
      WHERE t.enterprise_id = $1 AND t.audio_id = ANY($2::text[])
        AND ${partnerHadSql('t')}`,
    [enterpriseId, audioIds],
  )
  return new Set(rows.map((row) => row.audio_id))
}
