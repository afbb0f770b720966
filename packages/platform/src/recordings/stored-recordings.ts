import type { Queryable } from '../storage/database.js'
import { RECORDING_DATA_COLUMNS, type RecordingRow } from './recording-data.js'
import type { NewRecording } from './recording-store.js'

/** A recording stored, or deleted, under an audioId that a new one names. */
export interface StoredRow extends RecordingRow {
  enterprise_id: number
  /** Deleted: only its tombstone is left, and its audioId is not reused. */
  deleted: boolean
  /** recorded_at compared with the new one's recordedAt as instants, by the database. */
  same_recorded_at: boolean
}

/** What is stored or deleted under the audioIds of these recordings, in one query (any enterprise's). */
export function storedUnderAudioIds(
  db: Queryable,
  recordings: readonly NewRecording[],
): Promise<StoredRow[]> {
  return db.query<StoredRow>(
    `SELECT x.audio_id, coalesce(r.enterprise_id, t.enterprise_id) AS enterprise_id, r.audio_id IS NULL AS deleted,
            r.recorded_at = x.recorded_at AS same_recorded_at, ${RECORDING_DATA_COLUMNS}
       FROM unnest($1::text[], $2::timestamptz[]) AS x(audio_id, recorded_at)
       LEFT JOIN recordings r ON r.audio_id = x.audio_id
       LEFT JOIN recording_tombstones t ON t.audio_id = x.audio_id
      WHERE r.audio_id IS NOT NULL OR t.audio_id IS NOT NULL`,
    [recordings.map((each) => each.audioId), recordings.map((each) => each.recordedAt)],
  )
}
