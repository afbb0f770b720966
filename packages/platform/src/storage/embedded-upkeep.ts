import type { Database } from './database.js'

/**
 * What autovacuum does on PostgreSQL, for the embedded database, which has none. Without it PGlite's
 * churning tables (the queue of unnumbered changes, deliveries and their attempts, request nonces) and
 * their indexes fill with dead entries that every claim, sweep and feed read walks, while holding the one
 * connection; and the planner has no statistics nor visibility map, so the recordings query would sort
 * every match instead of reading recordings_by_time / recordings_by_device in order.
 *
 * Each pass reads the statistics PostgreSQL keeps of every table and runs, one table per statement, VACUUM
 * where dead rows passed BASE + VACUUM_SCALE of the live ones, or rows inserted since the last VACUUM passed
 * BASE + INSERT_SCALE of them (its visibility map lets index-only scans skip the rows), and ANALYZE where
 * rows changed since the last ANALYZE passed BASE + ANALYZE_SCALE of them: autovacuum's rules, with a
 * smaller scale for dead rows than its default 20%, so that each VACUUM finds little to do and holds the
 * connection briefly. Run often (EMBEDDED_UPKEEP_INTERVAL_MS), a pass keeps up with the churn; a table
 * left alone costs nothing.
 */
const BASE = 1000
const VACUUM_SCALE = 0.05
const INSERT_SCALE = 0.2
const ANALYZE_SCALE = 0.1

/** How often the platform runs a pass on the embedded database. */
export const EMBEDDED_UPKEEP_INTERVAL_MS = 10_000

/** One statement a pass ran, and how long it held the connection. */
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

/** One pass of the embedded upkeep; returns what it ran (nothing on PostgreSQL, where autovacuum does this). */
export async function tendEmbeddedDatabase(db: Database): Promise<UpkeepStep[]> {
  if (db.kind !== 'pglite') return []
  // The statistics are flushed at the end of a transaction, at most once a second unless asked.
  await db.query('SELECT pg_stat_force_next_flush()')
  const tables = await db.query<TableStats>(
    `SELECT relname AS table, n_live_tup AS live, n_dead_tup AS dead, n_ins_since_vacuum AS inserted,
            n_mod_since_analyze AS modified
       FROM pg_stat_user_tables WHERE schemaname = 'public' ORDER BY relname`,
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

export interface UpkeepLogger {
  debug(details: object, message: string): void
  warn(details: object, message: string): void
}

/**
 * Runs a pass every EMBEDDED_UPKEEP_INTERVAL_MS on the embedded database (one at a time); stop() waits for
 * the pass under way. Nothing on PostgreSQL.
 */
export function keepEmbeddedDatabase(db: Database, logger: UpkeepLogger): { stop(): Promise<void> } {
  if (db.kind !== 'pglite') return { stop: async () => {} }
  let running: Promise<void> = Promise.resolve()
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const steps = await tendEmbeddedDatabase(db)
        if (steps.length > 0) logger.debug({ steps }, 'embedded database upkeep')
      } catch (error) {
        logger.warn({ err: error }, 'embedded database upkeep failed')
      }
    })
  }, EMBEDDED_UPKEEP_INTERVAL_MS)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
