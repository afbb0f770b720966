import type { Logger } from '@earshot/support/logger'
import type { Database, Queryable } from './database.js'

/**
 * What autovacuum does, where nothing does it: on the embedded database, which has none, and on a
 * PostgreSQL server whose autovacuum is off. Without it the churning tables (the queue of unnumbered
 * changes, deliveries and their attempts, request nonces) and their indexes fill with dead entries that
 * every claim, sweep and feed read walks (on PGlite, while holding the one connection); and the planner
 * has no statistics nor visibility map, so the recordings query would sort every match instead of reading
 * recordings_by_time / recordings_by_device in order.
 *
 * Each pass reads the statistics PostgreSQL keeps of every table and runs, one table per statement, VACUUM
 * where dead rows passed BASE + VACUUM_SCALE of the live ones, or rows inserted since the last VACUUM passed
 * BASE + INSERT_SCALE of them (its visibility map lets index-only scans skip the rows), and ANALYZE where
 * rows changed since the last ANALYZE passed BASE + ANALYZE_SCALE of them: autovacuum's rules, with a
 * smaller scale for dead rows than its default 20%, so that each VACUUM finds little to do and holds the
 * embedded database's connection briefly. Run often (UPKEEP_INTERVAL_MS), a pass keeps up with the churn;
 * a table left alone costs nothing.
 */
const BASE = 1000
const VACUUM_SCALE = 0.05
const INSERT_SCALE = 0.2
const ANALYZE_SCALE = 0.1

/** How often the platform runs a pass. */
export const UPKEEP_INTERVAL_MS = 10_000

/** Any number, shared by every instance: one instance tends a PostgreSQL database at a time. */
const UPKEEP_LOCK = 0x7570_6b70

/** One statement a pass ran, and how long it took. */
export interface UpkeepStep {
  table: string
  statement: 'VACUUM' | 'ANALYZE' | 'VACUUM (ANALYZE)'
  ms: number
}

interface TableStats {
  table: string
  live: number
  dead: number
  inserted: number
  modified: number
}

/** Whether this database needs the platform's upkeep: PGlite always, PostgreSQL when its autovacuum is off. */
export async function needsUpkeep(db: Database): Promise<boolean> {
  if (db.kind === 'pglite') return true
  const [row] = await db.query<{ on: boolean }>("SELECT current_setting('autovacuum')::boolean AS on")
  return row?.on === false
}

/**
 * One pass; returns what it ran. On PostgreSQL it runs on one connection holding an advisory lock, and
 * does nothing when another instance holds it.
 */
export async function tendDatabase(db: Database): Promise<UpkeepStep[]> {
  if (db.kind === 'pglite') return tend(db, true)
  return db.session(async (session) => {
    const [lock] = await session.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1) AS taken', [
      UPKEEP_LOCK,
    ])
    if (!lock?.taken) return []
    try {
      await session.query(PACED_AS_AUTOVACUUM, [VACUUM_PACING])
      return await tend(session, false)
    } finally {
      // One statement, so that the lock is not left held by a reset that failed.
      await session.query(
        `SELECT pg_advisory_unlock($1), (SELECT count(set_config(name, reset_val, false))
           FROM pg_settings WHERE name = ANY($2::text[]))`,
        [UPKEEP_LOCK, VACUUM_PACING],
      )
    }
  })
}

/**
 * A VACUUM or ANALYZE typed by hand runs flat out; autovacuum pauses after each share of its work
 * (autovacuum_vacuum_cost_delay and _limit) so as not to take a core from the statements serving requests,
 * and on PostgreSQL a pass does the same: flat out, each VACUUM of the deliveries delayed the pushes of a
 * busy 2-core machine for most of a second (docs/benchmarks.md, the paced push run). The embedded database
 * is not paced: there a pass holds the one connection, and pausing would hold it longer.
 */
const PACED_AS_AUTOVACUUM = `SELECT count(set_config(name,
  coalesce(nullif(current_setting('autovacuum_' || name), '-1'), current_setting(name)), false))
  FROM unnest($1::text[]) AS name`
/** The settings that pace a VACUUM; autovacuum's own are these prefixed `autovacuum_`, -1 meaning these. */
const VACUUM_PACING = ['vacuum_cost_delay', 'vacuum_cost_limit']

/**
 * ANALYZE's sample on the embedded database, in rows per column is 300 times this: a third of PostgreSQL's
 * default, which plans the platform's queries as well and takes a third of the time (at 1,000,000
 * recordings, 62 ms instead of 230 ms), while it holds the one connection.
 */
const EMBEDDED_STATISTICS_TARGET = 30

async function tend(db: Queryable, embedded: boolean): Promise<UpkeepStep[]> {
  if (embedded) await db.query(`SET default_statistics_target = ${EMBEDDED_STATISTICS_TARGET}`)
  // The statistics are flushed at the end of a transaction, at most once a second unless asked.
  await db.query('SELECT pg_stat_force_next_flush()')
  const tables = await db.query<TableStats>(
    `SELECT relname AS table, n_live_tup AS live, n_dead_tup AS dead, n_ins_since_vacuum AS inserted,
            n_mod_since_analyze AS modified
       FROM pg_stat_user_tables WHERE schemaname = current_schema() ORDER BY relname`,
  )
  const steps: UpkeepStep[] = []
  for (const { table, live, dead, inserted, modified } of tables) {
    const vacuum = dead > BASE + VACUUM_SCALE * live || inserted > BASE + INSERT_SCALE * live
    const analyze = modified > BASE + ANALYZE_SCALE * live
    if (!vacuum && !analyze) continue
    const statement = vacuum && analyze ? 'VACUUM (ANALYZE)' : vacuum ? 'VACUUM' : 'ANALYZE'
    const started = performance.now()
    await db.query(`${statement} ${quoteIdentifier(table)}`)
    steps.push({ table, statement, ms: performance.now() - started })
  }
  return steps
}

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`

export type UpkeepLogger = Pick<Logger, 'info' | 'debug' | 'warn'>

/**
 * Where the database needs it (needsUpkeep), runs a pass (an embedded data directory written by an earlier
 * run may never have been vacuumed nor analyzed), then one every UPKEEP_INTERVAL_MS, one at a time; stop()
 * waits for the pass under way.
 */
export async function keepDatabaseTended(
  db: Database,
  logger: UpkeepLogger,
): Promise<{ stop(): Promise<void> }> {
  if (!(await needsUpkeep(db))) return { stop: async () => {} }
  if (db.kind === 'postgres') {
    logger.info(
      {},
      "the database server's autovacuum is off: the platform vacuums and analyzes its tables itself",
    )
  }
  const pass = async () => {
    try {
      const steps = await tendDatabase(db)
      if (steps.length > 0) logger.debug({ steps }, 'database upkeep')
    } catch (error) {
      logger.warn({ err: error }, 'database upkeep failed')
    }
  }
  await pass()
  let running: Promise<void> | undefined
  // A pass still under way when the next is due (a paced VACUUM of a large table) is not queued behind.
  const timer = setInterval(() => {
    running ??= pass().finally(() => {
      running = undefined
    })
  }, UPKEEP_INTERVAL_MS)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
