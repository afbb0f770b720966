import type { Database } from './database.js'

/** Growth of the recordings table, in pages, beyond a tenth of its size at the last VACUUM ANALYZE that calls for another. */
const MIN_GROWTH_PAGES = 16

/**
 * What autovacuum does on PostgreSQL, for the embedded database, which has none: without it PGlite
 * never has planner statistics nor a visibility map, so the recordings query (DESIGN.md §4) is planned
 * as a bitmap scan and a sort of every match instead of an index-only scan of recordings_by_time /
 * recordings_by_device, and a deep page costs a sort of the whole enterprise. Once the recordings table
 * has grown by more than a tenth (relpages is its size at the last VACUUM ANALYZE), VACUUM ANALYZE
 * refreshes both. Nothing to do on PostgreSQL. True when it ran.
 */
export async function tendEmbeddedDatabase(db: Database): Promise<boolean> {
  if (db.kind !== 'pglite') return false
  const [size] = await db.query<{ pages: number; seen: number }>(
    `SELECT pg_relation_size(oid) / current_setting('block_size')::int AS pages, relpages AS seen
       FROM pg_class WHERE oid = 'recordings'::regclass`,
  )
  const pages = size?.pages ?? 0
  const seen = size?.seen ?? 0
  if (pages <= seen + Math.max(MIN_GROWTH_PAGES, seen / 10)) return false
  await db.query('VACUUM (ANALYZE) recordings')
  return true
}
