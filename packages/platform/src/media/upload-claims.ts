import type { Readable } from 'node:stream'
import type { Queryable } from '../storage/database.js'
import type { MediaStore, StoredFile } from './media-store.js'

/** Whose upload a key is: the recording whose audio it is to become. */
export interface UploadOwner {
  key: string
  enterpriseId: number
  audioId: string
}

/** The claim of an upload was let go before the recording named its file (sql/000022.sql). */
export class UploadClaimLostError extends Error {
  constructor(key: string) {
    super(
      `the upload to ${key} outlived its claim (EARSHOT_MEDIA_UPLOAD_GRACE): its file is left to the orphan sweep`,
    )
    this.name = 'UploadClaimLostError'
  }
}

/**
 * Stores an upload under a key claimed in the database first: the claim commits before the first byte is
 * stored, so the orphan sweep never takes a file it lists for unclaimed while its upload may still name it.
 * Once stored, the claim is marked finished, its grace counted again from then; the transaction naming the
 * file must end it (saveStoredAudio). Should storing fail, nothing was stored and the claim goes.
 */
export async function storeClaimed(
  db: Queryable,
  store: MediaStore,
  owner: UploadOwner,
  body: Readable,
  options: { maxBytes: number; contentType: string },
): Promise<StoredFile> {
  await db.query('INSERT INTO media_uploads (store_key, enterprise_id, audio_id) VALUES ($1, $2, $3)', [
    owner.key,
    owner.enterpriseId,
    owner.audioId,
  ])
  let stored: StoredFile
  try {
    stored = await store.put(owner.key, body, options)
  } catch (error) {
    await dropUploadClaim(db, owner.key)
    throw error
  }
  const finished = await db.query(
    'UPDATE media_uploads SET finished_at = now() WHERE store_key = $1 RETURNING store_key',
    [owner.key],
  )
  if (finished.length === 0) throw new UploadClaimLostError(owner.key)
  return stored
}

/** Ends the claim of an upload that will name no file (none was stored, or it is removed). */
export async function dropUploadClaim(db: Queryable, key: string): Promise<void> {
  await db.query('DELETE FROM media_uploads WHERE store_key = $1', [key])
}

/**
 * Ends the claims of the files a transaction names. One let go meanwhile (its upload outlived the grace)
 * fails the transaction: the sweep may be removing that file. The delete waits for a sweep's letting go
 * of the same row, or the sweep's for this one: exactly one of them ends the claim.
 */
export async function endUploadClaims(tx: Queryable, keys: readonly string[]): Promise<void> {
  const ended = await tx.query<{ store_key: string }>(
    'DELETE FROM media_uploads WHERE store_key = ANY($1) RETURNING store_key',
    [keys],
  )
  if (ended.length === keys.length) return
  const found = new Set(ended.map((row) => row.store_key))
  throw new UploadClaimLostError(keys.find((key) => !found.has(key)) ?? '')
}

/** Lets go of the claims older than the grace by the database's clock (uploads that died); returns how many. */
export async function letGoOfStaleClaims(db: Queryable, graceSeconds: number): Promise<number> {
  const gone = await db.query(
    `DELETE FROM media_uploads
      WHERE coalesce(finished_at, started_at) < now() - $1::float8 * interval '1 second'
      RETURNING store_key`,
    [graceSeconds],
  )
  return gone.length
}

/** The keys among `keys` that no recording names and no upload claims, in one snapshot of the database. */
export async function unclaimedUnnamed(db: Queryable, keys: readonly string[]): Promise<string[]> {
  const rows = await db.query<{ key: string }>(
    `SELECT key FROM unnest($1::text[]) AS listed (key)
      WHERE NOT EXISTS (SELECT 1 FROM recording_audio a WHERE a.store_key = listed.key)
        AND NOT EXISTS (SELECT 1 FROM media_uploads u WHERE u.store_key = listed.key)`,
    [keys],
  )
  return rows.map((row) => row.key)
}
