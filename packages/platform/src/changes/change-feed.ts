import {
  type Change,
  type ChangeKind,
  InvalidParameterError,
  type ResolvedChangesRequest,
} from '@earshot/protocol'
import { isoTime } from '../enterprises/enterprise-store.js'
import { RECORDING_DATA_COLUMNS, type RecordingRow, recordingData } from '../recordings/recording-data.js'
import type { Queryable } from '../storage/database.js'

/** One page of an enterprise's changes after a cursor (DESIGN.md §10). */
export interface ChangesPage {
  items: Change[]
  nextCursor: string
  hasMore: boolean
}

// A cursor names the last seq read. Versioned, so its form can change without breaking a partner's stored one.
const CURSOR = /^1:(0|[1-9]\d{0,17})$/

export function encodeCursor(seq: bigint): string {
  return Buffer.from(`1:${seq}`).toString('base64url')
}

/** The seq a cursor names; a cursor this feed did not give is refused naming the field (4001). */
export function decodeCursor(cursor: string): bigint {
  const match = /^[A-Za-z0-9_-]+$/.test(cursor)
    ? CURSOR.exec(Buffer.from(cursor, 'base64url').toString())
    : null
  if (!match?.[1])
    throw new InvalidParameterError('cursor', 'is not a cursor the feed gave (pass nextCursor as answered)')
  return BigInt(match[1])
}

/** Changes numbered by one read at most (change-feed-schema.ts). */
const NUMBERING_BATCH = 10_000

interface ChangeRow extends Partial<RecordingRow> {
  seq: string
  audio_id: string
  change: ChangeKind
  at: string
  present: boolean
}

/**
 * The changes after the cursor, oldest first. The changes of finished transactions are numbered first; only
 * numbered changes are read, and numbering never goes behind a seq given (change-feed-schema.ts), so a page
 * never passes a change that commits later. `data` is the recording as it is now: absent once it is deleted.
 */
export async function readChanges(
  db: Queryable,
  enterpriseId: number,
  request: ResolvedChangesRequest,
): Promise<ChangesPage> {
  const after = request.cursor === undefined ? 0n : decodeCursor(request.cursor)
  // The head read as the statement starts, before this numbering: a cursor the feed gave is never past it.
  const [numbering] = await db.query<{ numbered: string; head: string }>(
    'SELECT number_recording_changes($1)::text AS numbered, (SELECT last_seq FROM change_feed_head)::text AS head',
    [NUMBERING_BATCH],
  )
  if (after > BigInt(numbering?.head ?? 0)) {
    throw new InvalidParameterError('cursor', 'is past the end of the feed: not a cursor the feed gave')
  }
  const rows = await db.query<ChangeRow>(
    `SELECT c.seq::text AS seq, c.audio_id, c.change, ${isoTime('c.at')} AS at, r.audio_id IS NOT NULL AS present,
            ${RECORDING_DATA_COLUMNS}
       FROM recording_changes c LEFT JOIN recordings r ON r.audio_id = c.audio_id
      WHERE c.enterprise_id = $1 AND c.seq > $2
      ORDER BY c.seq LIMIT $3`,
    [enterpriseId, after.toString(), request.size + 1],
  )
  const page = rows.slice(0, request.size)
  const items = page.map((row): Change => {
    const item: Change = { seq: Number(row.seq), audioId: row.audio_id, change: row.change, at: row.at }
    if (row.present) item.data = recordingData(row as RecordingRow)
    return item
  })
  const last = page.at(-1)
  return {
    items,
    nextCursor: encodeCursor(last ? BigInt(last.seq) : after),
    // A full batch numbered may have left more to number: ask again rather than report the end.
    hasMore: rows.length > request.size || Number(numbering?.numbered) === NUMBERING_BATCH,
  }
}
