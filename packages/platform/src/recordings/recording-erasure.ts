import { PushEventType } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'
import type { RecordingEvents } from './recording-events.js'

/*
 * What an erasure asks of the recordings: which recordings it covers, and deleting them many at a time as
 * a deletion does one (deleteRecording), leaving no device name behind in the counters.
 */

/** The audioIds of a device's recordings now. */
export async function audioIdsOfDevice(
  tx: Queryable,
  enterpriseId: number,
  deviceUid: string,
): Promise<string[]> {
  const rows = await tx.query<{ audio_id: string }>(
    'SELECT audio_id FROM recordings WHERE enterprise_id = $1 AND device_uid = $2 ORDER BY audio_id',
    [enterpriseId, deviceUid],
  )
  return rows.map((row) => row.audio_id)
}

/** Of the audioIds given, those the enterprise has or had (deleted ones too). */
export async function knownAudioIds(
  tx: Queryable,
  enterpriseId: number,
  audioIds: readonly string[],
): Promise<string[]> {
  const rows = await tx.query<{ audio_id: string }>(
    `SELECT audio_id FROM recordings WHERE enterprise_id = $1 AND audio_id = ANY($2::text[])
     UNION
     SELECT audio_id FROM recording_tombstones WHERE enterprise_id = $1 AND audio_id = ANY($2::text[])`,
    [enterpriseId, audioIds],
  )
  return rows.map((row) => row.audio_id)
}

/** Up to `limit` of the enterprise's recordings recorded before the cutoff, oldest first. */
export async function recordedBefore(
  tx: Queryable,
  enterpriseId: number,
  cutoff: string,
  limit: number,
): Promise<string[]> {
  const rows = await tx.query<{ audio_id: string }>(
    `SELECT audio_id FROM recordings WHERE enterprise_id = $1 AND recorded_at < $2::timestamptz
      ORDER BY recorded_at, audio_id LIMIT $3`,
    [enterpriseId, cutoff, limit],
  )
  return rows.map((row) => row.audio_id)
}

/** Whether the enterprise has a recording recorded before the cutoff. */
export async function anyRecordedBefore(
  tx: Queryable,
  enterpriseId: number,
  cutoff: string,
): Promise<boolean> {
  return (await recordedBefore(tx, enterpriseId, cutoff, 1)).length > 0
}

/**
 * Deletes the enterprise's recordings among audioIds (one, for deleteRecording): tombstones, the deletions
 * announced, and the device counters' rows left at zero by them, whose key is a deviceUid; answers the
 * audioIds deleted. Call it inside a transaction.
 */
export async function deleteRecordings(
  tx: Queryable,
  enterpriseId: number,
  audioIds: readonly string[],
  events: RecordingEvents,
): Promise<string[]> {
  const rows = await tx.query<{ audio_id: string; device_uid: string }>(
    `WITH deleted AS (DELETE FROM recordings WHERE enterprise_id = $1 AND audio_id = ANY($2::text[])
                      RETURNING audio_id, device_uid),
          tombstones AS (INSERT INTO recording_tombstones (audio_id, enterprise_id)
                         SELECT audio_id, $1 FROM deleted)
     SELECT audio_id, device_uid FROM deleted ORDER BY audio_id`,
    [enterpriseId, audioIds],
  )
  if (rows.length === 0) return []
  const devices = [...new Set(rows.map((row) => row.device_uid))]
  for (const table of ['recording_device_day_counts', 'recording_device_month_counts']) {
    await tx.query(
      `DELETE FROM ${table} WHERE enterprise_id = $1 AND device_uid = ANY($2::text[]) AND n = 0`,
      [enterpriseId, devices],
    )
  }
  const deleted = rows.map((row) => row.audio_id)
  await events.announce(
    tx,
    enterpriseId,
    deleted.map((audioId) => ({ audioId, eventType: PushEventType.DELETED })),
  )
  return deleted
}
