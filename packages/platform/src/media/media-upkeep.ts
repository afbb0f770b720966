import type { Logger } from '@earshot/support/logger'
import type { Database } from '../storage/database.js'
import type { MediaStore } from './media-store.js'

/** Notified when a replacement or deletion listing files to remove commits (sql/000016.sql). */
export const GARBAGE_CHANNEL = 'earshot_media_garbage'
const BATCH = 500
const SWEEP_INTERVAL_MS = 60 * 60 * 1000
/**
 * A stored file no recording names is removed once it is this old: an upload's file is written before
 * the transaction naming it commits, so a younger one may be about to be named.
 */
export const ORPHAN_GRACE_MS = 60 * 60 * 1000
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

/** Removes stored files no recording names (a crash between storing a file and committing it), and unfinished uploads. */
export async function sweepOrphanedMedia(db: Database, store: MediaStore, now: number): Promise<number> {
  let removed = await store.removeUnfinished(now - UNFINISHED_GRACE_MS)
  let batch: string[] = []
  const sweep = async () => {
    const named = await db.query<{ store_key: string }>(
      'SELECT store_key FROM recording_audio WHERE store_key = ANY($1)',
      [batch],
    )
    const keep = new Set(named.map((row) => row.store_key))
    const orphans = batch.filter((key) => !keep.has(key))
    await Promise.all(orphans.map((key) => store.remove(key)))
    removed += orphans.length
    batch = []
  }
  for await (const file of store.list()) {
    if (file.writtenAt >= now - ORPHAN_GRACE_MS) continue
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
  clock: () => number,
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
    run(() => sweepOrphanedMedia(db, store, clock()), 'sweeping orphaned audio')
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
