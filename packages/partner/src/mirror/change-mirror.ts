import { setTimeout as sleep } from 'node:timers/promises'
import { ChangeKind, type RecordingData, type TranscriptSentence } from '@earshot/protocol'
import { retryDelay } from '@earshot/support/queue'
import {
  type ChangeItem,
  type ChangePage,
  type EarshotClient,
  isRetryable,
} from '../client/earshot-client.js'
import { EarshotConfigError } from '../client/errors.js'
import type { Database } from '../storage/database.js'

/*
 * A local mirror of the enterprise's recordings, kept current from the change feed.
 * Each page of changes is applied in one transaction together with the cursor after it, so the mirror
 * and its cursor never disagree: after a crash the next sync starts where the last committed page ended.
 */
const statements = [
  // One row per recording the platform holds, with its data as the feed last gave it.
  `CREATE TABLE IF NOT EXISTS mirror_recordings (
    audio_id text PRIMARY KEY,
    data jsonb NOT NULL,
    sentences jsonb,
    seq bigint NOT NULL,
    changed_at timestamptz NOT NULL
  )`,
  // One row: whose recordings these are and where the feed goes on (NULL: from its beginning).
  `CREATE TABLE IF NOT EXISTS mirror_state (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    enterprise_id bigint NOT NULL,
    cursor text,
    last_seq bigint,
    applied bigint NOT NULL,
    updated_at timestamptz NOT NULL
  )`,
]

export interface MirroredRecording {
  audioId: string
  data: RecordingData
  /** `data.transcriptSentences` parsed, for the transcript form. */
  sentences: TranscriptSentence[] | undefined
  /** The seq of the change that last wrote it, and when that change was made. */
  seq: number
  changedAt: Date
}

export interface ChangeMirror {
  /** Where the feed goes on; undefined before the first page was applied. */
  cursor(): Promise<string | undefined>
  /**
   * Applies a page of changes read from `from` and stores its nextCursor, in one transaction. Returns
   * false, applying nothing, when the stored cursor is no longer `from` (another sync moved it on).
   */
  apply(page: ChangePage, from: string | undefined): Promise<boolean>
  recordings(): Promise<MirroredRecording[]>
}

/**
 * The mirror's tables in `db` (created if missing), for `enterpriseId`: a database mirroring another
 * enterprise is refused, since its cursor means nothing on this enterprise's feed.
 */
export async function openChangeMirror(db: Database, enterpriseId: number): Promise<ChangeMirror> {
  const state = await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('earshot_partner_mirror_schema'))`)
    for (const sql of statements) await tx.query(sql)
    // The row exists from the start, so that apply() always has it to lock.
    await tx.query(
      `INSERT INTO mirror_state (enterprise_id, applied, updated_at) VALUES ($1, 0, now())
       ON CONFLICT (only_row) DO NOTHING`,
      [enterpriseId],
    )
    const [row] = await tx.query<{ enterprise_id: number }>('SELECT enterprise_id FROM mirror_state')
    return row as { enterprise_id: number }
  })
  if (state.enterprise_id !== enterpriseId) {
    throw new EarshotConfigError(
      `this mirror holds the recordings of enterprise ${state.enterprise_id}, ` +
        `not of enterprise ${enterpriseId}`,
    )
  }

  return {
    async cursor() {
      const [row] = await db.query<{ cursor: string | null }>('SELECT cursor FROM mirror_state')
      return row?.cursor ?? undefined
    },

    apply(page, from) {
      return db.transaction(async (tx) => {
        const [row] = await tx.query<{ cursor: string | null }>('SELECT cursor FROM mirror_state FOR UPDATE')
        if ((row?.cursor ?? undefined) !== from) return false
        // A deletion in the page decides for its recording, wherever it stands: seqs follow the order of the
        // deleting and writing transactions' ids, so an update may be numbered after the deletion that
        // removed its recording (its data then absent). Otherwise the recording's last change decides: its
        // data is the recording's current data. An audioId once deleted is never used again.
        const deleted = new Set(
          page.items.filter((item) => item.change === ChangeKind.DELETED).map((item) => item.audioId),
        )
        const last = new Map<string, ChangeItem>()
        for (const item of page.items) {
          last.delete(item.audioId)
          last.set(item.audioId, item)
        }
        const written = [...last.values()].filter(
          (item): item is ChangeItem & { data: RecordingData } =>
            !deleted.has(item.audioId) && item.data !== undefined,
        )
        if (deleted.size > 0) {
          await tx.query('DELETE FROM mirror_recordings WHERE audio_id = ANY($1::text[])', [[...deleted]])
        }
        if (written.length > 0) {
          await tx.query(
            `INSERT INTO mirror_recordings (audio_id, data, sentences, seq, changed_at)
             SELECT a, d::jsonb, s::jsonb, q, t::timestamptz
               FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) AS u(a, d, s, q, t)
             ON CONFLICT (audio_id) DO UPDATE
               SET data = EXCLUDED.data, sentences = EXCLUDED.sentences, seq = EXCLUDED.seq,
                   changed_at = EXCLUDED.changed_at
             WHERE mirror_recordings.seq < EXCLUDED.seq`,
            [
              written.map((item) => item.audioId),
              written.map((item) => JSON.stringify(item.data)),
              written.map((item) => (item.sentences === undefined ? null : JSON.stringify(item.sentences))),
              written.map((item) => item.seq),
              written.map((item) => item.at),
            ],
          )
        }
        const lastSeq = page.items.at(-1)?.seq ?? null
        await tx.query(
          `UPDATE mirror_state SET cursor = $1, last_seq = coalesce($2, last_seq), applied = applied + $3,
                                   updated_at = now()`,
          [page.nextCursor, lastSeq, page.items.length],
        )
        return true
      })
    },

    async recordings() {
      const rows = await db.query<{
        audio_id: string
        data: RecordingData
        sentences: TranscriptSentence[] | null
        seq: number
        changed_at: Date
      }>('SELECT audio_id, data, sentences, seq, changed_at FROM mirror_recordings ORDER BY audio_id')
      return rows.map((row) => ({
        audioId: row.audio_id,
        data: row.data,
        sentences: row.sentences ?? undefined,
        seq: row.seq,
        changedAt: row.changed_at,
      }))
    },
  }
}

export interface SyncOptions {
  client: EarshotClient
  mirror: ChangeMirror
  /** Changes per page, 1 to 100; default 100. */
  size?: number | undefined
  /**
   * Once caught up, keep polling for new changes until `signal` aborts; transient failures (the
   * platform unreachable or unavailable) are then waited out too. Without it sync returns when caught up.
   */
  follow?: boolean | undefined
  /** Stops the sync: a page being applied is committed first, a request in flight is abandoned. */
  signal?: AbortSignal | undefined
  /**
   * While following, the waits in ms before each poll that found nothing new (or failed), in a row;
   * the last repeats, each gets ±20% jitter, and a page with changes starts over. Default 0.5 s doubling
   * to 30 s.
   */
  pollSchedule?: readonly number[] | undefined
  /** After each page applied; a promise it returns is awaited before the next page is read. */
  onPage?: ((page: ChangePage) => void | Promise<void>) | undefined
  /** While following, each transient failure before it is waited out. */
  onRetry?: ((error: unknown, waitMs: number) => void) | undefined
}

export interface SyncResult {
  /** Changes taken from the feed by this sync. */
  applied: number
  /** Where the feed goes on (undefined only when no page was ever read). */
  cursor: string | undefined
  /** The last poll reached the end of the feed; false when `signal` stopped the sync before it did. */
  caughtUp: boolean
}

const DEFAULT_POLL_SCHEDULE = [0.5, 1, 2, 4, 8, 16, 30].map((seconds) => seconds * 1000)

/**
 * Applies the change feed to the mirror from its stored cursor until the feed is caught up with
 * (hasMore false) and, with `follow`, keeps polling with a capped exponential backoff.
 */
export async function syncChanges(options: SyncOptions): Promise<SyncResult> {
  const { client, mirror, size, follow = false, signal, onPage, onRetry } = options
  const schedule = options.pollSchedule ?? DEFAULT_POLL_SCHEDULE
  if (schedule.length === 0 || !schedule.every((ms) => Number.isFinite(ms) && ms >= 0)) {
    throw new EarshotConfigError('pollSchedule must be a non-empty list of delays in ms, each ≥ 0')
  }
  let applied = 0
  let cursor = await mirror.cursor()
  /** Polls in a row that found nothing new or failed. */
  let idle = 0
  while (!signal?.aborted) {
    let progressed = false
    let failure: unknown
    try {
      for (;;) {
        const page = await client.changes({ cursor, size }, signal ? { signal } : {})
        if (!(await mirror.apply(page, cursor))) {
          // Another sync on the same database moved the cursor on: go on from there.
          cursor = await mirror.cursor()
          continue
        }
        cursor = page.nextCursor
        applied += page.items.length
        if (page.items.length > 0) progressed = true
        await onPage?.(page)
        if (!page.hasMore) break
        if (signal?.aborted) return { applied, cursor, caughtUp: false }
      }
      if (!follow) return { applied, cursor, caughtUp: true }
    } catch (error) {
      if (signal?.aborted) break
      if (!follow || !isRetryable(error)) throw error
      failure = error
    }
    if (progressed) idle = 0
    const waitMs = pollDelay(schedule, idle++)
    if (failure !== undefined) onRetry?.(failure, waitMs)
    // Stopped while following: the mirror is as current as it was at the last poll.
    if (!(await wait(waitMs, signal))) return { applied, cursor, caughtUp: failure === undefined }
  }
  return { applied, cursor, caughtUp: false }
}

function pollDelay(schedule: readonly number[], polls: number): number {
  return retryDelay(schedule, polls, Math.random, { jitter: 0.2, repeatLast: true }) as number
}

/** False when the signal aborted the wait. */
async function wait(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    await sleep(ms, undefined, signal && { signal })
    return true
  } catch (error) {
    if (signal?.aborted) return false
    throw error
  }
}
