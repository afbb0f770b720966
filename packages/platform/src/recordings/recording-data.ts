import type { AudioRecordingData, RecordingData, TranscriptRecordingData } from '@earshot/protocol'

/** A recording's columns as the query and the push read them. */
export interface RecordingRow {
  audio_id: string
  device_uid: string
  title: string
  denoise_url: string | null
  record_duration: number | null
  transcript_id: number | null
  transcript_text: string | null
  transcript_sentences: string | null
  duration_ms: number | null
  words_count: number | null
}

/** The columns recordingData reads, of the recordings table aliased `r`, for a statement's select list. */
export const RECORDING_DATA_COLUMNS = `r.device_uid, r.title, r.denoise_url, r.record_duration, r.transcript_id,
       r.transcript_text, r.transcript_sentences, r.duration_ms, r.words_count`

/** Set A once the transcript exists, otherwise set B. */
export function recordingData(row: RecordingRow): RecordingData {
  if (row.transcript_id !== null) {
    return {
      deviceUid: row.device_uid,
      title: row.title,
      transcriptId: row.transcript_id,
      transcriptText: row.transcript_text ?? '',
      transcriptSentences: row.transcript_sentences ?? '[]',
      durationMs: row.duration_ms ?? 0,
      wordsCount: row.words_count ?? 0,
    } satisfies TranscriptRecordingData
  }
  return {
    deviceUid: row.device_uid,
    title: row.title,
    denoiseUrl: row.denoise_url ?? '',
    recordDuration: row.record_duration ?? 0,
  } satisfies AudioRecordingData
}
