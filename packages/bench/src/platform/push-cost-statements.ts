/**
 * What each SQL statement of a drain costs, on PostgreSQL, for push-cost.bench.ts: pg_stat_statements
 * (when the server preloads it) for calls, planning and execution time, rows and WAL per statement (planning
 * where the server sets pg_stat_statements.track_planning), and pg_stat_activity
 * sampled every few milliseconds for what the database's backends were doing or waiting for. Both are read
 * over a connection to the server's own database (DATABASE_URL), so that no backend of the measured
 * database is the bench's.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { connectPg, type PgClient } from './cpu-proc.js'

export interface StatementCost {
  query: string
  calls: number
  planMs: number
  execMs: number
  rows: number
  walBytes: number
}

/** Active samples of the database's backends, by what they did (`wait_event_type:wait_event` or CPU) in which statement. */
export type ActivitySamples = Record<string, number>

export interface StatementsReader {
  /** Why pg_stat_statements cannot be read here (not preloaded), or undefined when it can. */
  unavailable?: string
  /** Whether the server counts statements' planning (pg_stat_statements.track_planning). */
  tracksPlanning: boolean
  reset(): Promise<void>
  /** The statements run in `database` since the last reset. */
  read(database: string): Promise<StatementCost[]>
  /** Samples the database's active backends every `everyMs` until the function it returns is called. */
  sampleActivity(database: string, everyMs: number): () => Promise<{ samples: number; by: ActivitySamples }>
  close(): Promise<void>
}

async function availability(client: PgClient): Promise<{ unavailable?: string; tracksPlanning: boolean }> {
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    await client.query('SELECT 1 FROM pg_stat_statements LIMIT 1')
    const { rows } = await client.query<{ on: boolean }>(
      "SELECT current_setting('pg_stat_statements.track_planning')::boolean AS on",
    )
    return { tracksPlanning: rows[0]?.on === true }
  } catch (error) {
    return { unavailable: (error as Error).message, tracksPlanning: false }
  }
}

const READ = `SELECT query, sum(calls)::float8 AS calls, sum(total_plan_time)::float8 AS "planMs",
       sum(total_exec_time)::float8 AS "execMs",
       sum(rows)::float8 AS rows, sum(wal_bytes)::float8 AS "walBytes"
  FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
 WHERE d.datname = $1
 GROUP BY query`

const SAMPLE = `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') || ' in '
         || left(regexp_replace(query, '\\s+', ' ', 'g'), 40) AS what
  FROM pg_stat_activity WHERE datname = $1 AND state = 'active'`

export async function statementsReader(serverUrl: string): Promise<StatementsReader> {
  const client = await connectPg(serverUrl)
  const { unavailable, tracksPlanning } = await availability(client)
  return {
    unavailable,
    tracksPlanning,
    async reset() {
      if (!unavailable) await client.query('SELECT pg_stat_statements_reset()')
    },
    async read(database) {
      if (unavailable) return []
      return (await client.query<StatementCost>(READ, [database])).rows
    },
    sampleActivity(database, everyMs) {
      const by: ActivitySamples = {}
      let samples = 0
      let running = true
      const loop = (async () => {
        while (running) {
          const { rows } = await client.query<{ what: string }>(SAMPLE, [database])
          samples++
          for (const { what } of rows) by[what] = (by[what] ?? 0) + 1
          await sleep(everyMs)
        }
      })()
      return async () => {
        running = false
        await loop
        return { samples, by }
      }
    },
    close: () => client.end(),
  }
}

/** Statements of several runs added up, by their text. */
export function addStatements(runs: StatementCost[][]): StatementCost[] {
  const byQuery = new Map<string, StatementCost>()
  for (const run of runs) {
    for (const statement of run) {
      const sum = byQuery.get(statement.query)
      if (!sum) byQuery.set(statement.query, { ...statement })
      else {
        sum.calls += statement.calls
        sum.planMs += statement.planMs
        sum.execMs += statement.execMs
        sum.rows += statement.rows
        sum.walBytes += statement.walBytes
      }
    }
  }
  return [...byQuery.values()].sort((a, b) => b.planMs + b.execMs - (a.planMs + a.execMs))
}
