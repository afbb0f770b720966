import type { Queryable } from '../storage/database.js'

/**
 * Makes the feed number the changes a database brought from another PostgreSQL server (a dump restored
 * elsewhere); returns how many it marked. Queued changes wait until every transaction older than theirs
 * has ended, told by the server's transaction ids (sql/000014.sql); a change carrying an id this server has
 * not reached yet can only come from another server, where it was committed, and would wait until this
 * server's ids caught up. When there is one, the changes beyond this server's ids and those already ready
 * are marked ready with id 1, so that they are numbered in the order they were queued; a change whose id
 * falls among the transactions running here keeps it and waits for them, as any change does.
 */
export async function adoptRestoredChanges(db: Queryable): Promise<number> {
  const [row] = await db.query<{ adopted: number }>(
    `WITH here AS (SELECT pg_current_snapshot() AS snapshot),
     adopted AS (
       UPDATE recording_change_queue q SET txid = '1' FROM here
        WHERE EXISTS (SELECT FROM recording_change_queue WHERE txid >= pg_snapshot_xmax(here.snapshot))
          AND (q.txid >= pg_snapshot_xmax(here.snapshot) OR q.txid < pg_snapshot_xmin(here.snapshot))
          AND q.txid <> '1'
       RETURNING 1)
     SELECT count(*)::int AS adopted FROM adopted`,
  )
  return row?.adopted ?? 0
}
