import {
  type Change,
  type ChangeKind,
  InvalidParameterError,
  type ResolvedChangesRequest,
} from '@earshot/protocol'
import {
  type AudioLink,
  RECORDING_DATA_COLUMNS,
  type RecordingRow,
  recordingData,
} from '../recordings/recording-data.js'
import type { Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'

/** One page of an enterprise's changes after a cursor. */
export interface ChangesPage {
  items: Change[]
  nextCursor: string
  hasMore: boolean
  /** How long the oldest of the enterprise's committed changes not yet in the feed has waited. */
  lagSeconds: number
}

/**
 * A cursor names the last seq read, versioned so that its form can change without breaking a partner's
 * stored one: `2:<seq>` counts the enterprise's own changes; `1:<seq>` (given before changes were numbered
 * per enterprise) names a seq of the global numbering, which the feed maps to the enterprise's own.
 */
interface Cursor {
  version: 1 | 2
  seq: bigint
}

const CURSOR = /^([12]):(0|[1-9]\d{0,17})$/
const BASE64URL = /^[A-Za-z0-9_-]+$/

export function encodeCursor(seq: bigint): string {
  return Buffer.from(`2:${seq}`).toString('base64url')
}

const notGiven = (why: string) => new InvalidParameterError('cursor', why)

/** The cursor's version and seq; one the feed did not give is refused naming the field (4001). */
export function decodeCursor(cursor: string): Cursor {
  const bytes = BASE64URL.test(cursor) ? Buffer.from(cursor, 'base64url') : undefined
  // Canonical only: a spelling that decodes to the same bytes (spare low bits set) was not given.
  const match = bytes?.toString('base64url') === cursor ? CURSOR.exec(bytes.toString()) : null
  if (!match?.[1] || !match[2]) throw notGiven('is not a cursor the feed gave (pass nextCursor as answered)')
  return { version: match[1] === '1' ? 1 : 2, seq: BigInt(match[2]) }
}

/** Changes numbered by one read at most (sql/000014.sql). */
const NUMBERING_BATCH = 10_000

/**
 * A page stops once its changes' data would seal to about this many bytes (Base64 adds a third to the
 * JSON), so that no answer seals more than about 1 MiB on the event loop; it always holds one change.
 */
const PAGE_JSON_BUDGET = Math.floor((1024 * 1024 * 3) / 4)
/** What a change's JSON adds to its text columns: field names, seq, times, escapes of a short title. */
const ITEM_OVERHEAD_BYTES = 400

/** A row of read_changes (sql/000014.sql): the first carries head, numbered and lag for the read. */
interface ChangeRow extends Partial<RecordingRow> {
  head: string
  numbered: number
  seq: string
  audio_id: string
  change: ChangeKind
  at: string
  present: boolean
  candidates: number
  lag_seconds: number | null
}

/**
 * The changes after the cursor, oldest first. The changes of finished transactions are numbered first; only
 * numbered changes are read, and numbering never goes behind a seq given (sql/000014.sql), so a page
 * never passes a change that commits later. `data` is the recording as it is now: absent once it is deleted.
 */
export async function readChanges(
  db: Queryable,
  enterpriseId: number,
  request: ResolvedChangesRequest,
  audioLink?: AudioLink,
): Promise<ChangesPage> {
  const cursor =
    request.cursor === undefined ? { version: 2 as const, seq: 0n } : decodeCursor(request.cursor)
  const after = cursor.version === 1 ? await ownSeq(db, enterpriseId, cursor.seq) : cursor.seq
  const rows = await db.query<ChangeRow>(
    `SELECT f.head::text, f.numbered, f.lag_seconds, f.seq::text, f.audio_id, f.change, ${isoTime('f.at')} AS at,
            f.present, f.candidates, ${RECORDING_DATA_COLUMNS.replaceAll('r.', 'f.')}
       FROM read_changes($1, $2, $3, $4, $5, $6) f`,
    [
      enterpriseId,
      after.toString(),
      request.size + 1,
      PAGE_JSON_BUDGET,
      ITEM_OVERHEAD_BYTES,
      NUMBERING_BATCH,
    ],
  )
  if (after > BigInt(rows[0]?.head ?? 0))
    throw notGiven('is past the end of the feed: not a cursor the feed gave')
  const page = rows.filter((row) => row.seq !== null).slice(0, request.size)
  const items = page.map((row): Change => {
    const item: Change = { seq: Number(row.seq), audioId: row.audio_id, change: row.change, at: row.at }
    if (row.present) item.data = recordingData(row as RecordingRow, audioLink)
    return item
  })
  const last = page.at(-1)
  return {
    items,
    nextCursor: encodeCursor(last ? BigInt(last.seq) : after),
    // A full batch numbered may have left more to number: ask again rather than report the end.
    hasMore: (rows[0]?.candidates ?? 0) > page.length || Number(rows[0]?.numbered) === NUMBERING_BATCH,
    lagSeconds: Math.max(0, Math.round((rows[0]?.lag_seconds ?? 0) * 1000) / 1000),
  }
}

/**
 * The enterprise's own seq of a cursor given before per-enterprise numbering: the change it named is one
 * of the enterprise's (or 0, the start); any other seq was not given to this enterprise.
 */
async function ownSeq(db: Queryable, enterpriseId: number, legacySeq: bigint): Promise<bigint> {
  if (legacySeq === 0n) return 0n
  const [row] = await db.query<{ seq: string }>(
    'SELECT seq::text AS seq FROM recording_changes WHERE enterprise_id = $1 AND legacy_seq = $2',
    [enterpriseId, legacySeq.toString()],
  )
  if (!row) throw notGiven('is not a cursor the feed gave (pass nextCursor as answered)')
  return BigInt(row.seq)
}
