import type { Queryable } from '../storage/database.js'
import type { StoredFile } from './media-store.js'
import { endUploadClaims } from './upload-claims.js'

export interface StoredAudio extends StoredFile {
  audioId: string
  enterpriseId: number
  key: string
  contentType: string
}

/**
 * Records each recording's current file; call it in the transaction that makes the recording name it. The
 * file it replaces is listed for removal once that commits (sql/000016.sql). Each file's upload claim ends
 * here (storeClaimed); one let go meanwhile fails the transaction.
 */
export async function saveStoredAudio(tx: Queryable, files: readonly StoredAudio[]): Promise<void> {
  await endUploadClaims(
    tx,
    files.map((file) => file.key),
  )
  const column = <T>(pick: (file: StoredAudio) => T) => files.map(pick)
  await tx.query(
    `INSERT INTO recording_audio (audio_id, enterprise_id, store_key, sha256, bytes, content_type)
     SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::int8[], $6::text[])
     ON CONFLICT (audio_id) DO UPDATE SET store_key = excluded.store_key, sha256 = excluded.sha256,
                                          bytes = excluded.bytes, content_type = excluded.content_type,
                                          stored_at = now()`,
    [
      column((file) => file.audioId),
      column((file) => file.enterpriseId),
      column((file) => file.key),
      column((file) => file.sha256),
      column((file) => file.bytes),
      column((file) => file.contentType),
    ],
  )
}

/** The store keys of these recordings' files, by audioId (those with stored audio only). */
export async function storeKeysOf(tx: Queryable, audioIds: readonly string[]): Promise<Map<string, string>> {
  const rows = await tx.query<{ audio_id: string; store_key: string }>(
    'SELECT audio_id, store_key FROM recording_audio WHERE audio_id = ANY($1::text[])',
    [audioIds],
  )
  return new Map(rows.map((row) => [row.audio_id, row.store_key]))
}

/** How many of these files are listed for removal and not yet removed from the store. */
export async function filesAwaitingRemoval(db: Queryable, storeKeys: readonly string[]): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM media_garbage WHERE store_key = ANY($1::text[])',
    [storeKeys],
  )
  return row?.n ?? 0
}
