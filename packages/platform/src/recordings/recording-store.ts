import {
  type AudioRecordingData,
  InvalidParameterError,
  PushEventType,
  type RecordingData,
  type ResolvedRecordingFilter,
  serializeTranscriptSentences,
  type TranscriptRecordingData,
  type TranscriptSentence,
} from '@earshot/protocol'
import { type DeliveryEvent, scheduleDeliveries } from '../push/delivery-store.js'
import type { Queryable } from '../storage/database.js'

export interface TranscriptPart {
  transcriptId: number
  transcriptText: string
  sentences: TranscriptSentence[]
  durationMs: number
  wordsCount: number
}

/** A recording as ingested (DESIGN.md §7 JSON Lines): an audio part, a transcript part, or both. */
export interface NewRecording {
  audioId: string
  deviceUid: string
  title: string
  recordedAt: string
  denoiseUrl?: string | undefined
  recordDuration?: number | undefined
  transcript?: TranscriptPart | undefined
}

export interface RecordingPage {
  total: number
  items: { audioId: string; data: RecordingData }[]
}

/** Rows per INSERT statement: large enough to amortise round trips, small enough for PGlite. */
export const INSERT_BATCH = 1000

/**
 * Inserts recordings of one enterprise and schedules their pushes; call it inside a transaction.
 * An audioId that already exists is refused with 4001.
 */
export async function insertRecordings(
  tx: Queryable,
  enterpriseId: number,
  list: readonly NewRecording[],
): Promise<void> {
  for (let start = 0; start < list.length; start += INSERT_BATCH) {
    const batch = list.slice(start, start + INSERT_BATCH)
    await insertBatch(tx, enterpriseId, batch).catch((error: unknown) => {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
      const id = /\(audio_id\)=\((.*)\)/.exec((error as { detail?: string }).detail ?? '')?.[1]
      throw new InvalidParameterError('audioId', `${id ? JSON.stringify(id) : 'a recording'} already exists`)
    })
    await scheduleDeliveries(tx, enterpriseId, batch.flatMap(eventsOfNewRecording))
  }
}

/** DESIGN.md §6: one event when the audio part becomes available, one when the transcript does. */
function eventsOfNewRecording(recording: NewRecording): DeliveryEvent[] {
  const events: DeliveryEvent[] = []
  if (recording.denoiseUrl !== undefined) {
    events.push({ audioId: recording.audioId, eventType: PushEventType.AUDIO_READY })
  }
  if (recording.transcript) {
    events.push({ audioId: recording.audioId, eventType: PushEventType.TRANSCRIPT_READY })
  }
  return events
}

const UNIQUE_VIOLATION = '23505'

async function insertBatch(
  db: Queryable,
  enterpriseId: number,
  batch: readonly NewRecording[],
): Promise<void> {
  const column = <T>(pick: (r: NewRecording) => T) => batch.map(pick)
  await db.query(
    `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration,
                               transcript_id, transcript_text, transcript_sentences, duration_ms, words_count,
                               transcript_added_at)
       SELECT a, $1, d, t, r, u, rd, ti, tt, ts, dm, wc, CASE WHEN ti IS NULL THEN NULL ELSE now() END
         FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::int8[],
                     $8::int8[], $9::text[], $10::text[], $11::int8[], $12::int8[])
              AS x(a, d, t, r, u, rd, ti, tt, ts, dm, wc)`,
    [
      enterpriseId,
      column((r) => r.audioId),
      column((r) => r.deviceUid),
      column((r) => r.title),
      column((r) => r.recordedAt),
      column((r) => r.denoiseUrl ?? null),
      column((r) => r.recordDuration ?? null),
      column((r) => r.transcript?.transcriptId ?? null),
      column((r) => r.transcript?.transcriptText ?? null),
      column((r) => (r.transcript ? serializeTranscriptSentences(r.transcript.sentences) : null)),
      column((r) => r.transcript?.durationMs ?? null),
      column((r) => r.transcript?.wordsCount ?? null),
    ],
  )
}

/**
 * Adds or replaces the transcript part of a recording and schedules its push; call it inside a
 * transaction. False when the enterprise has no such recording.
 */
export async function attachTranscript(
  tx: Queryable,
  enterpriseId: number,
  audioId: string,
  transcript: TranscriptPart,
): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE recordings SET transcript_id = $3, transcript_text = $4, transcript_sentences = $5, duration_ms = $6,
                           words_count = $7, transcript_added_at = now()
      WHERE enterprise_id = $1 AND audio_id = $2 RETURNING 1`,
    [
      enterpriseId,
      audioId,
      transcript.transcriptId,
      transcript.transcriptText,
      serializeTranscriptSentences(transcript.sentences),
      transcript.durationMs,
      transcript.wordsCount,
    ],
  )
  if (rows.length === 0) return false
  await scheduleDeliveries(tx, enterpriseId, [{ audioId, eventType: PushEventType.TRANSCRIPT_READY }])
  return true
}

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

/**
 * One page of an enterprise's recordings matching the filter (DESIGN.md §4): newest first by
 * recordedAt then audioId, startTime ≤ recordedAt < endTime, and the exact total of all matches.
 */
export async function queryRecordings(
  db: Queryable,
  enterpriseId: number,
  filter: ResolvedRecordingFilter,
): Promise<RecordingPage> {
  const params: unknown[] = [enterpriseId]
  const where = ['enterprise_id = $1']
  const match = (condition: string, value: unknown) => {
    params.push(value)
    where.push(condition.replace('?', `$${params.length}`))
  }
  if (filter.audioId !== undefined) match('audio_id = ?', filter.audioId)
  if (filter.deviceUid !== undefined) match('device_uid = ?', filter.deviceUid)
  if (filter.startTime !== undefined) match('recorded_at >= ?::timestamptz', filter.startTime)
  if (filter.endTime !== undefined) match('recorded_at < ?::timestamptz', filter.endTime)
  const conditions = where.join(' AND ')

  const [counted] = await db.query<{ total: number }>(
    `SELECT count(*) AS total FROM recordings WHERE ${conditions}`,
    params,
  )
  const total = counted?.total ?? 0
  const offset = (filter.page - 1) * filter.size
  if (offset >= total) return { total, items: [] }

  const rows = await db.query<RecordingRow>(
    `SELECT audio_id, device_uid, title, denoise_url, record_duration, transcript_id, transcript_text,
            transcript_sentences, duration_ms, words_count
       FROM recordings WHERE ${conditions}
      ORDER BY recorded_at DESC, audio_id DESC
      LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, filter.size, offset],
  )
  return { total, items: rows.map((row) => ({ audioId: row.audio_id, data: recordingData(row) })) }
}

/** Set A once the transcript exists, otherwise set B (DESIGN.md §4). */
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

/**
 * Records the partner's receipt of a recording (DESIGN.md §5) and confirms every delivery of it, in
 * whatever state (a callback may overtake the recording of its push's ack). Idempotent; false when
 * the audioId is not a recording of this enterprise — another enterprise's id looks the same as none.
 */
export async function confirmReceipt(db: Queryable, enterpriseId: number, audioId: string): Promise<boolean> {
  const rows = await db.query(
    `WITH owned AS (SELECT audio_id FROM recordings WHERE audio_id = $2 AND enterprise_id = $1),
          added AS (INSERT INTO receipts (audio_id, enterprise_id) SELECT audio_id, $1 FROM owned
                    ON CONFLICT (audio_id) DO NOTHING),
          confirmed AS (UPDATE deliveries SET state = 'confirmed', due_at = NULL, claimed_by = NULL,
                               confirmed_at = now()
                         WHERE audio_id IN (SELECT audio_id FROM owned) AND state <> 'confirmed')
     SELECT 1 FROM owned`,
    [enterpriseId, audioId],
  )
  return rows.length === 1
}
