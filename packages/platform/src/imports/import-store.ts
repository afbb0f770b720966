import { serializeTranscriptSentences } from '@earshot/protocol'
import type { NewRecording } from '../recordings/recording-store.js'
import { type StoredRow, storedUnderAudioIds } from '../recordings/stored-recordings.js'
import type { Queryable } from '../storage/database.js'

/** What an import line means given what is stored under its audioId. */
export type ImportVerdict =
  | { kind: 'new' }
  /** Stored with identical content: skipped. */
  | { kind: 'stored' }
  /** Stored without a transcript, identical otherwise; the line adds one: attached. */
  | { kind: 'adds-transcript' }
  | { kind: 'conflict'; reason: string }

/** Judges each recording against the one stored (or deleted) under its audioId, in one query. */
export async function judgeAgainstStored(
  db: Queryable,
  enterpriseId: number,
  recordings: readonly NewRecording[],
): Promise<ImportVerdict[]> {
  const rows = await storedUnderAudioIds(db, recordings)
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
