import type { Logger } from '@earshot/support/logger'
import { Gauge, type Registry } from 'prom-client'
import type { Database, Queryable } from '../storage/database.js'

/** What holds the change feed back: the oldest transaction still running on the server. */
export interface FeedHolder {
  /** A backend's pid, or the gid of a prepared transaction. */
  pid?: number
  preparedGid?: string
  database: string | null
  /** How long its transaction has run. */
  seconds: number | null
  state: string | null
  application: string | null
}

/**
 * The SQL condition of a queued change held back: committed (it is seen), but its transaction is not older
 * than every one still running, so it cannot be numbered yet (sql/000014.sql). A change ready to be
 * numbered is not held back: the next read numbers it.
 */
export const HELD_BACK = 'txid >= pg_snapshot_xmin(pg_current_snapshot())'

/**
 * How long the oldest committed change held back from the feed has waited, in seconds (0 when none): a
 * change is numbered once every transaction older than it has finished, so one long transaction anywhere
 * on the server holds every later change back.
 */
export async function feedLagSeconds(db: Queryable): Promise<number> {
  const [row] = await db.query<{ seconds: number | null }>(
    `SELECT extract(epoch FROM now() - min(at))::float8 AS seconds FROM recording_change_queue WHERE ${HELD_BACK}`,
  )
  return Math.max(0, row?.seconds ?? 0)
}

/**
 * The transaction that holds the feed back on PostgreSQL: the one with the oldest transaction id still
 * running, a backend's or a prepared transaction's, in any database of the server (transaction ids are the
 * server's). Undefined on the embedded database (its one connection is this process's) or when none runs.
 */
export async function feedHolder(db: Database): Promise<FeedHolder | undefined> {
  if (db.kind !== 'postgres') return undefined
  const [row] = await db.query<{
    pid: number | null
    gid: string | null
    database: string | null
    seconds: number | null
    state: string | null
    application: string | null
  }>(
    `SELECT pid, NULL AS gid, datname AS database, extract(epoch FROM now() - xact_start)::float8 AS seconds,
            state, application_name AS application, age(backend_xid) AS age
       FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
     UNION ALL
     SELECT NULL, gid, database, extract(epoch FROM now() - prepared)::float8, 'prepared', NULL, age(transaction)
       FROM pg_prepared_xacts
     ORDER BY age DESC LIMIT 1`,
  )
  if (!row) return undefined
  return {
    ...(row.pid !== null && { pid: row.pid }),
    ...(row.gid !== null && { preparedGid: row.gid }),
    database: row.database,
    seconds: row.seconds,
    state: row.state,
    application: row.application,
  }
}

/** Changes numbered per statement. */
const NUMBERING_BATCH = 10_000

/**
 * Numbers the changes ready to be numbered, a batch per statement, as reads of the feed would: a feed
 * nobody reads keeps its queue small.
 */
export async function numberReadyChanges(db: Queryable): Promise<void> {
  for (let numbered = NUMBERING_BATCH; numbered === NUMBERING_BATCH; ) {
    const [row] = await db.query<{ numbered: number }>('SELECT number_recording_changes($1) AS numbered', [
      NUMBERING_BATCH,
    ])
    numbered = Number(row?.numbered ?? 0)
  }
}

export type FeedLagLogger = Pick<Logger, 'warn'>

export interface FeedLagWatch {
  /** Numbers what is ready and looks at the lag now (the timer does this every intervalMs). */
  look(): Promise<void>
  stop(): void
}

export interface FeedLagOptions {
  /** How often to look; default 5 s. */
  intervalMs?: number
  /** A lag over this long is a warning naming what holds the feed back, at most once per this long; default 60 s. */
  warnAfterSeconds?: number
}

/**
 * Every intervalMs: numbers the changes ready (so that a feed nobody reads keeps its queue small, and
 * the lag is only what a transaction holds back), and, past warnAfterSeconds, warns naming the
 * transaction that holds the feed back — at most once per warnAfterSeconds while it lasts.
 */
export function watchFeedLag(
  db: Database,
  logger: FeedLagLogger,
  { intervalMs = 5000, warnAfterSeconds = 60 }: FeedLagOptions = {},
): FeedLagWatch {
  let warnedAt = Number.NEGATIVE_INFINITY
  const look = async () => {
    await numberReadyChanges(db)
    const lagSeconds = await feedLagSeconds(db)
    if (lagSeconds < warnAfterSeconds) return
    if (performance.now() - warnedAt < warnAfterSeconds * 1000) return
    warnedAt = performance.now()
    const holder = await feedHolder(db)
    logger.warn(
      { lagSeconds: Math.round(lagSeconds), holder: holder ?? null },
      holder
        ? `the change feed is ${Math.round(lagSeconds)} s behind: ${describeHolder(holder)} holds it back; ` +
            'partners see no change made after it began until it ends (commit or roll it back, or end it with pg_terminate_backend)'
        : `the change feed is ${Math.round(lagSeconds)} s behind: a transaction still running holds it back`,
    )
  }
  const timer = setInterval(() => {
    look().catch((error: unknown) => logger.warn({ err: error }, 'could not look at the change feed lag'))
  }, intervalMs)
  timer.unref()
  return { look, stop: () => clearInterval(timer) }
}

function describeHolder(holder: FeedHolder): string {
  const who =
    holder.pid !== undefined
      ? `the transaction of backend pid ${holder.pid}`
      : `the prepared transaction ${JSON.stringify(holder.preparedGid)}`
  const age = holder.seconds === null ? '' : `, open for ${Math.round(holder.seconds)} s`
  return `${who} (database ${holder.database ?? 'unknown'}${age}${holder.application ? `, ${holder.application}` : ''})`
}

/** Registers earshot_change_feed_lag_seconds, read at each scrape. */
export function registerFeedLagMetric(registry: Registry, db: Queryable): void {
  new Gauge({
    name: 'earshot_change_feed_lag_seconds',
    help: 'How long the oldest committed change not yet in the change feed has waited: a transaction still running on the database server holds it back (0 when none)',
    registers: [registry],
    async collect() {
      this.set(await feedLagSeconds(db))
    },
  })
}
