import {
  deletionPushes,
  forgetAttemptAnswers,
  recordingsThePartnerHad,
} from '../deliveries/delivery-erasure.js'
import { filesAwaitingRemoval, storeKeysOf, uploadsClaimedFor } from '../media/stored-audio.js'
import { deleteRecordings, recordedBefore } from '../recordings/recording-erasure.js'
import type { RecordingEvents } from '../recordings/recording-events.js'
import type { Database, Queryable } from '../storage/database.js'
import { coverRecordings, type ErasureKind } from './erasure-store.js'

/*
 * The steps of an erasure, each a short transaction that commits only while its runner holds the lease
 * (the fence): delete and scrub the next batch of recordings; once none is left, wait until every endpoint
 * acknowledged its deletions and the audio files are gone, scrub once more and complete; once complete,
 * look at the partners' confirmations when one came.
 */

export interface ClaimedErasure {
  erasureId: number
  enterpriseId: number
  kind: ErasureKind
  cutoff: string | null
  deleted: boolean
  completed: boolean
}

/** Statements keep their arrays of audioIds at most this long. */
const CHUNK = 1000

/** Extends the lease in the transaction; false when another runner holds it now. */
async function fence(tx: Queryable, erasureId: number, runner: string, leaseMs: number): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE erasures SET lease_until = now() + make_interval(secs => $3::float8 / 1000)
      WHERE erasure_id = $1 AND claimed_by = $2 RETURNING 1`,
    [erasureId, runner, leaseMs],
  )
  return rows.length === 1
}

/**
 * Deletes the next batch of the erasure's recordings, removes their audio and the answers kept from their
 * pushes, and records each endpoint's deletion push; answers how many it deleted, 0 once none is left
 * (the erasure is then marked deleted), or undefined when the lease was lost.
 */
export async function eraseNextBatch(
  db: Database,
  erasure: ClaimedErasure,
  options: { runner: string; leaseMs: number; batchSize: number; events: RecordingEvents },
): Promise<number | undefined> {
  return db.transaction(async (tx) => {
    if (!(await fence(tx, erasure.erasureId, options.runner, options.leaseMs))) return undefined
    const audioIds = await nextBatch(tx, erasure, options.batchSize)
    if (audioIds.length === 0) {
      await tx.query('UPDATE erasures SET deleted_at = now() WHERE erasure_id = $1', [erasure.erasureId])
      return 0
    }
    const storeKeys = await storeKeysOf(tx, audioIds)
    await deleteRecordings(tx, erasure.enterpriseId, audioIds, options.events)
    await forgetAttemptAnswers(tx, audioIds)
    const pushes = await deletionPushes(tx, audioIds)
    const live = pushes.filter((push) => !push.removed)
    await tx.query(
      `INSERT INTO erasure_deletions (erasure_id, endpoint_id, audio_id, acknowledged)
       SELECT $1, * FROM unnest($2::int8[], $3::text[], $4::bool[]) ON CONFLICT DO NOTHING`,
      [
        erasure.erasureId,
        live.map((p) => p.endpointId),
        live.map((p) => p.audioId),
        live.map((p) => p.acknowledged),
      ],
    )
    await tx.query(
      `UPDATE erasure_recordings r SET erased_at = now(), store_key = k.store_key
         FROM unnest($2::text[], $3::text[]) AS k(audio_id, store_key)
        WHERE r.erasure_id = $1 AND r.audio_id = k.audio_id`,
      [erasure.erasureId, audioIds, audioIds.map((audioId) => storeKeys.get(audioId) ?? null)],
    )
    return audioIds.length
  })
}

async function nextBatch(tx: Queryable, erasure: ClaimedErasure, size: number): Promise<string[]> {
  if (erasure.kind === 'retention') {
    const found = await recordedBefore(tx, erasure.enterpriseId, erasure.cutoff as string, size)
    await coverRecordings(tx, erasure.erasureId, found)
    return found
  }
  const rows = await tx.query<{ audio_id: string }>(
    `SELECT audio_id FROM erasure_recordings WHERE erasure_id = $1 AND erased_at IS NULL ORDER BY audio_id LIMIT $2`,
    [erasure.erasureId, size],
  )
  return rows.map((row) => row.audio_id)
}

/**
 * Completes the erasure when every endpoint has acknowledged every deletion, every audio file is gone from
 * the store and no upload for one of its recordings holds a claim: the answers kept from its pushes are
 * dropped once more (an attempt on the wire during the deletion may have written one since), and which
 * recordings the partner had is recorded. True when it completed; false when it still waits.
 */
export async function completeWhenAcknowledged(
  db: Database,
  erasure: ClaimedErasure,
  options: { runner: string; leaseMs: number },
): Promise<boolean> {
  if (!(await refreshAcknowledged(db, erasure.erasureId))) return false
  const keys = await db.query<{ store_key: string }>(
    'SELECT store_key FROM erasure_recordings WHERE erasure_id = $1 AND store_key IS NOT NULL',
    [erasure.erasureId],
  )
  if (
    (await filesAwaitingRemoval(
      db,
      keys.map((row) => row.store_key),
    )) > 0
  )
    return false
  // A chunk per transaction, so that a large erasure never holds the database for long; each is idempotent.
  for await (const audioIds of coveredChunks(db, erasure.erasureId)) {
    // An upload that began before the deletion removes its file when it ends; one cut off by a crash leaves
    // its claim until the media sweep removes the file.
    if ((await uploadsClaimedFor(db, audioIds)) > 0) return false
    const held = await db.transaction(async (tx) => {
      if (!(await fence(tx, erasure.erasureId, options.runner, options.leaseMs))) return false
      await forgetAttemptAnswers(tx, audioIds)
      const had = await recordingsThePartnerHad(tx, erasure.enterpriseId, audioIds)
      await tx.query(
        `UPDATE erasure_recordings SET had = audio_id = ANY($3::text[])
          WHERE erasure_id = $1 AND audio_id = ANY($2::text[])`,
        [erasure.erasureId, audioIds, [...had]],
      )
      return true
    })
    if (!held) return false
  }
  return db.transaction(async (tx) => {
    if (!(await fence(tx, erasure.erasureId, options.runner, options.leaseMs))) return false
    await tx.query(
      'UPDATE erasures SET completed_at = now(), confirmations_changed = true WHERE erasure_id = $1',
      [erasure.erasureId],
    )
    return true
  })
}

/**
 * Marks the deletions acknowledged since the last look, and forgets those to endpoints removed since; true
 * when none is left unacknowledged. A deletion whose delivery is gone was confirmed and pruned since.
 */
async function refreshAcknowledged(db: Database, erasureId: number): Promise<boolean> {
  const open = await db.query<{ endpoint_id: number; audio_id: string }>(
    'SELECT endpoint_id, audio_id FROM erasure_deletions WHERE erasure_id = $1 AND NOT acknowledged',
    [erasureId],
  )
  let left = 0
  for (let start = 0; start < open.length; start += CHUNK) {
    const chunk = open.slice(start, start + CHUNK)
    const pushes = await deletionPushes(db, [...new Set(chunk.map((row) => row.audio_id))])
    const found = new Map(pushes.map((push) => [`${push.endpointId}:${push.audioId}`, push]))
    const acknowledged: typeof chunk = []
    const removed: typeof chunk = []
    for (const row of chunk) {
      const push = found.get(`${row.endpoint_id}:${row.audio_id}`)
      if (push?.removed) removed.push(row)
      else if (!push || push.acknowledged) acknowledged.push(row)
      else left++
    }
    await settleDeletions(
      db,
      erasureId,
      'UPDATE erasure_deletions d SET acknowledged = true FROM',
      acknowledged,
    )
    await settleDeletions(db, erasureId, 'DELETE FROM erasure_deletions d USING', removed)
  }
  return left === 0
}

async function settleDeletions(
  db: Queryable,
  erasureId: number,
  change: string,
  rows: readonly { endpoint_id: number; audio_id: string }[],
): Promise<void> {
  if (rows.length === 0) return
  await db.query(
    `${change} unnest($2::int8[], $3::text[]) AS s(endpoint_id, audio_id)
      WHERE d.erasure_id = $1 AND d.endpoint_id = s.endpoint_id AND d.audio_id = s.audio_id`,
    [erasureId, rows.map((row) => row.endpoint_id), rows.map((row) => row.audio_id)],
  )
}

/** The erasure's audioIds, CHUNK at a time. */
async function* coveredChunks(tx: Queryable, erasureId: number): AsyncGenerator<string[]> {
  let after = ''
  for (;;) {
    const rows = await tx.query<{ audio_id: string }>(
      'SELECT audio_id FROM erasure_recordings WHERE erasure_id = $1 AND audio_id > $2 ORDER BY audio_id LIMIT $3',
      [erasureId, after, CHUNK],
    )
    if (rows.length === 0) return
    yield rows.map((row) => row.audio_id)
    after = (rows.at(-1) as { audio_id: string }).audio_id
  }
}

/**
 * Marks the erasure confirmed when every recording its partner had has the partner's confirmation. The
 * flag is cleared first, in its own statement: a confirmation committed after that sets it again, and is
 * looked at next time.
 */
export async function confirmWhenConfirmed(db: Database, erasureId: number): Promise<boolean> {
  await db.query('UPDATE erasures SET confirmations_changed = false WHERE erasure_id = $1', [erasureId])
  const rows = await db.query(
    `UPDATE erasures e SET confirmed_at = now()
      WHERE e.erasure_id = $1 AND e.confirmed_at IS NULL AND e.completed_at IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM erasure_recordings r
                         WHERE r.erasure_id = e.erasure_id AND r.had
                           AND NOT EXISTS (SELECT 1 FROM erasure_confirmations c
                                            WHERE c.audio_id = r.audio_id AND c.enterprise_id = e.enterprise_id))
      RETURNING 1`,
    [erasureId],
  )
  return rows.length === 1
}
