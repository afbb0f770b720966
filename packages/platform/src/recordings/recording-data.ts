import type { AudioRecordingData, RecordingData, TranscriptRecordingData } from '@earshot/protocol'

/** A recording's columns as the query and the push read them. */
export interface RecordingRow {
  audio_id: string
  device_uid: string
  title: string
  /** ISO-8601 in UTC with microseconds, as RECORDING_DATA_COLUMNS formats it. */
  recorded_at: string
  denoise_url: string | null
  record_duration: number | null
  transcript_id: number | null
  transcript_text: string | null
  transcript_sentences: string | null
  duration_ms: number | null
  words_count: number | null
}

/** The columns recordingData reads, of the recordings table aliased `r`, for a statement's select list. */
export const RECORDING_DATA_COLUMNS = `r.device_uid, r.title,
       to_char(r.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS recorded_at,
       r.denoise_url, r.record_duration, r.transcript_id, r.transcript_text, r.transcript_sentences,
       r.duration_ms, r.words_count`

/**
 * `denoise_url` of audio Earshot stores (media/): this prefix and the file's SHA-256. Partners never see it:
 * it becomes a signed link when an answer is made. Operators cannot give it (recording-input.ts).
 */
export const STORED_AUDIO = 'earshot-media:'

/** Mints the link of a recording's stored audio, for the enterprise an answer is made for. */
export type AudioLink = (audioId: string, sha256: string) => string

/** Where an enterprise's audio links come from (the platform's stored media). */
export interface AudioLinkSource {
  audioLinks(enterpriseId: number): Promise<AudioLink>
}

/**
 * Set A once the transcript exists (with the audio part too, when there is one), otherwise set B. Stored
 * audio's denoiseUrl is a link minted now; without `audioLink`, an empty string.
 */
export function recordingData(row: RecordingRow, audioLink?: AudioLink): RecordingData {
  const audio = audioPart(row, audioLink)
  if (row.transcript_id !== null) {
    return {
      deviceUid: row.device_uid,
      title: row.title,
      recordedAt: utcInstant(row.recorded_at),
      transcriptId: row.transcript_id,
      transcriptText: row.transcript_text ?? '',
      transcriptSentences: row.transcript_sentences ?? '[]',
      durationMs: row.duration_ms ?? 0,
      wordsCount: row.words_count ?? 0,
      ...audio,
    } satisfies TranscriptRecordingData
  }
  return {
    deviceUid: row.device_uid,
    title: row.title,
    recordedAt: utcInstant(row.recorded_at),
    denoiseUrl: audio?.denoiseUrl ?? '',
    recordDuration: audio?.recordDuration ?? 0,
  } satisfies AudioRecordingData
}

/** Milliseconds when the microseconds are whole ones (…00.000Z, as every other instant), else microseconds. */
function utcInstant(micros: string): string {
  return micros.endsWith('000Z') ? `${micros.slice(0, -4)}Z` : micros
}

function audioPart(
  row: RecordingRow,
  audioLink: AudioLink | undefined,
): { denoiseUrl: string; recordDuration: number } | undefined {
  if (row.denoise_url === null) return undefined
  const denoiseUrl = row.denoise_url.startsWith(STORED_AUDIO)
    ? (audioLink?.(row.audio_id, row.denoise_url.slice(STORED_AUDIO.length)) ?? '')
    : row.denoise_url
  return { denoiseUrl, recordDuration: row.record_duration ?? 0 }
}
