import { serializeTranscriptSentences } from '@earshot/protocol'
import { RECORDING_DATA_COLUMNS, type RecordingRow } from '../recordings/recording-data.js'
import type { NewRecording } from '../recordings/recording-store.js'
import type { Queryable } from '../storage/database.js'

/** What an import line means given what is stored under its audioId. */
export type ImportVerdict =
  | { kind: 'new' }
  /** Stored with identical content: skipped. */
  | { kind: 'stored' }
  /** Stored without a transcript, identical otherwise; the line adds one: attached. */
  | { kind: 'adds-transcript' }
  | { kind: 'conflict'; reason: string }

interface StoredRow extends RecordingRow {
  enterprise_id: number
  /** Deleted: only its tombstone is left, and its audioId is not reused. */
  deleted: boolean
  /** recorded_at compared with the line's recordedAt as instants, by the database. */
  same_recorded_at: boolean
}

/** Judges each recording against the one stored (or deleted) under its audioId, in one query. */
export async function judgeAgainstStored(
  db: Queryable,
  enterpriseId: number,
  recordings: readonly NewRecording[],
): Promise<ImportVerdict[]> {
  const rows = await db.query<StoredRow>(
    `SELECT x.audio_id, coalesce(r.enterprise_id, t.enterprise_id) AS enterprise_id, r.audio_id IS NULL AS deleted,
            r.recorded_at = x.recorded_at AS same_recorded_at, ${RECORDING_DATA_COLUMNS}
       FROM unnest($1::text[], $2::timestamptz[]) AS x(audio_id, recorded_at)
       LEFT JOIN recordings r ON r.audio_id = x.audio_id
       LEFT JOIN recording_tombstones t ON t.audio_id = x.audio_id
      WHERE r.audio_id IS NOT NULL OR t.audio_id IS NOT NULL`,
    [recordings.map((each) => each.audioId), recordings.map((each) => each.recordedAt)],
  )
  const stored = new Map(rows.map((row) => [row.audio_id, row]))
  return recordings.map((recording) => judge(enterpriseId, recording, stored.get(recording.audioId)))
}

function judge(enterpriseId: number, line: NewRecording, stored: StoredRow | undefined): ImportVerdict {
  if (!stored) return { kind: 'new' }
  if (stored.deleted) {
    return {
      kind: 'conflict',
      reason: `audioId ${JSON.stringify(line.audioId)} was deleted; it is not reused`,
    }
  }
  const exists = `audioId ${JSON.stringify(line.audioId)} already exists`
  if (stored.enterprise_id !== enterpriseId) {
    return { kind: 'conflict', reason: `${exists} in another enterprise` }
  }
  const differences = [
    stored.device_uid !== line.deviceUid && 'deviceUid',
    stored.title !== line.title && 'title',
    !stored.same_recorded_at && 'recordedAt',
    stored.denoise_url !== (line.denoiseUrl ?? null) && 'denoiseUrl',
    stored.record_duration !== (line.recordDuration ?? null) && 'recordDuration',
  ].filter((field) => field !== false)
  const storedTranscript = stored.transcript_id !== null
  if (storedTranscript && !line.transcript) differences.push('transcript (the line has none)')
  if (storedTranscript && line.transcript && !sameTranscript(stored, line.transcript)) {
    differences.push('transcript')
  }
  if (differences.length > 0) {
    return { kind: 'conflict', reason: `${exists} with a different ${differences.join(', ')}` }
  }
  return !storedTranscript && line.transcript ? { kind: 'adds-transcript' } : { kind: 'stored' }
}

function sameTranscript(stored: StoredRow, transcript: NonNullable<NewRecording['transcript']>): boolean {
  return (
    stored.transcript_id === transcript.transcriptId &&
    stored.transcript_text === transcript.transcriptText &&
    stored.transcript_sentences === serializeTranscriptSentences(transcript.sentences) &&
    stored.duration_ms === transcript.durationMs &&
    stored.words_count === transcript.wordsCount
  )
}
