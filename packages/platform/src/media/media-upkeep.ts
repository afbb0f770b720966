import type { Logger } from '@earshot/support/logger'
import type { Database } from '../storage/database.js'
import type { MediaStore } from './media-store.js'
import { letGoOfStaleClaims, unclaimedUnnamed } from './upload-claims.js'

/** Notified when a replacement or deletion listing files to remove commits (sql/000016.sql). */
export const GARBAGE_CHANNEL = 'earshot_media_garbage'
const BATCH = 500
const SWEEP_INTERVAL_MS = 60 * 60 * 1000
/** What an unfinished upload left (a crash mid-upload) is removed once this old. */
const UNFINISHED_GRACE_MS = 24 * 60 * 60 * 1000

/**
 * Removes the files of deleted recordings and replaced audio once their change has committed (a trigger
 * lists them in media_garbage and notifies), then forgets them.
 */
export async function collectMediaGarbage(db: Database, store: MediaStore): Promise<number> {
  let removed = 0
  for (;;) {
    const rows = await db.query<{ store_key: string }>(
      'SELECT store_key FROM media_garbage ORDER BY since LIMIT $1',
      [BATCH],
    )
    const keys = rows.map((row) => row.store_key)
    await Promise.all(keys.map((key) => store.remove(key)))
    if (keys.length > 0) await db.query('DELETE FROM media_garbage WHERE store_key = ANY($1)', [keys])
    removed += keys.length
    if (keys.length < BATCH) return removed
  }
}

/**
 * Removes stored files no recording names and no upload claims (a crash between storing a file and
 * committing it), after letting go of the claims older than `claimGraceSeconds` by the database's clock;
 * and unfinished uploads. The store's timestamps decide nothing here (a multipart upload's LastModified
 * is when it started).
 *
 * Why a file listed and then found unnamed and unclaimed can go, whatever runs at once on other instances:
 * an upload's claim commits before its first byte is stored, so a file the listing saw had a claim before
 * the listing began. The check reads names and claims in one snapshot, and the transaction naming a file
 * ends its claim: the snapshot sees the claim or the name. Seeing neither, the claim was let go or dropped
 * by a failed upload, and no transaction can name the file any more (endUploadClaims fails without its
 * claim); or it was named and since replaced or deleted. Claims are let go before the listing, so a file
 * stored after the sweep began keeps its claim through the check.
 */
export async function sweepOrphanedMedia(
  db: Database,
  store: MediaStore,
  now: number,
  claimGraceSeconds: number,
): Promise<number> {
  let removed = await store.removeUnfinished(now - UNFINISHED_GRACE_MS)
  await letGoOfStaleClaims(db, claimGraceSeconds)
  let batch: string[] = []
  const sweep = async () => {
    const orphans = await unclaimedUnnamed(db, batch)
    await Promise.all(orphans.map((key) => store.remove(key)))
    removed += orphans.length
    batch = []
  }
  for await (const file of store.list()) {
    batch.push(file.key)
    if (batch.length === BATCH) await sweep()
  }
  if (batch.length > 0) await sweep()
  return removed
}

/** Collects garbage whenever a change listing some commits, and sweeps orphans every hour. */
export async function tendMedia(
  db: Database,
  store: MediaStore,
  options: { clock: () => number; claimGraceSeconds: number },
  log: Pick<Logger, 'warn'>,
): Promise<{ stop(): Promise<void> }> {
  let running: Promise<unknown> = Promise.resolve()
  const run = (step: () => Promise<unknown>, what: string) => {
    running = running.then(step).catch((error: unknown) => log.warn({ err: error }, `media: ${what} failed`))
  }
  const collect = () => run(() => collectMediaGarbage(db, store), 'removing replaced and deleted audio')
  const unlisten = await db.listen(GARBAGE_CHANNEL, collect)
  collect()
  const timer = setInterval(() => {
    collect()
    run(
      () => sweepOrphanedMedia(db, store, options.clock(), options.claimGraceSeconds),
      'sweeping orphaned audio',
    )
  }, SWEEP_INTERVAL_MS)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await unlisten()
      await running
    },
  }
}
