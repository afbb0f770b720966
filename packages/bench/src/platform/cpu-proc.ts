/**
 * CPU time of processes read from outside, from /proc (Linux): utime + stime of /proc/<pid>/stat, in
 * clock ticks (USER_HZ, 100 a second), for `cpu.bench.ts`. PostgreSQL backends are named by the server
 * itself (pg_stat_activity, asked over a connection to another database, so that the asking backend is
 * not among them) and read one by one.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

/** USER_HZ: the unit of /proc's CPU times (`getconf CLK_TCK`). */
export const CLOCK_TICKS_PER_SECOND = 100

export interface ProcessTicks {
  /** utime + stime so far, clock ticks. */
  ticks: number
  /** stime alone: the part spent in the kernel (system calls, the network stack). */
  kernelTicks: number
  /** The process's start time (ticks since boot): tells a reused pid from the process read before. */
  startedAt: number
}

/** utime + stime of a process so far; undefined once it has ended. */
export function processTicks(pid: number): ProcessTicks | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // pid (comm) state ppid ...: after the comm, utime and stime are the 12th and 13th fields, starttime the 20th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const kernelTicks = Number(fields[12])
  return { ticks: Number(fields[11]) + kernelTicks, kernelTicks, startedAt: Number(fields[19]) }
}

/** One reading of a database's backends: each one's ticks, by pid and start time. */
export type BackendReading = Map<string, ProcessTicks & { pid: number; type: string }>

/** What a database's backends spent between two readings. */
export interface BackendDelta {
  ticks: number
  /** Backends read both times. */
  kept: number
  /** Backends that appeared between the readings: all their time counts. */
  appeared: number
  /** Backends that ended between the readings: their time since the first reading is lost. */
  vanished: number
  /** Backend types seen (client backend, autovacuum worker, parallel worker…), with how many of each. */
  types: Record<string, number>
}

export function backendDelta(before: BackendReading, after: BackendReading): BackendDelta {
  let ticks = 0
  let kept = 0
  let appeared = 0
  const types: Record<string, number> = {}
  for (const [key, now] of after) {
    types[now.type] = (types[now.type] ?? 0) + 1
    const then = before.get(key)
    if (then) {
      kept++
      ticks += now.ticks - then.ticks
    } else {
      appeared++
      ticks += now.ticks
    }
  }
  const vanished = [...before.keys()].filter((key) => !after.has(key)).length
  return { ticks, kept, appeared, vanished, types }
}

export interface PgClient {
  connect(): Promise<void>
  query<Row>(text: string, values?: unknown[]): Promise<{ rows: Row[] }>
  end(): Promise<void>
}

/** A connection to the database `url` names, with the pg driver @earshot/test-kit depends on. */
export async function connectPg(url: string): Promise<PgClient> {
  const require = createRequire(import.meta.resolve('@earshot/test-kit/backends'))
  const pg = require('pg') as { Client: new (options: { connectionString: string }) => PgClient }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return client
}

/** The name of the database a PostgreSQL URL names. */
export const databaseNameOf = (url: string) => new URL(url).pathname.slice(1)

/**
 * Reads the backends of `database` on the server of `serverUrl` (a connection to the database the URL
 * names, which must be another one).
 */
export async function backendReader(serverUrl: string, database: string) {
  const client = await connectPg(serverUrl)
  return {
    async read(): Promise<BackendReading> {
      const { rows } = await client.query<{ pid: number; backend_type: string }>(
        'SELECT pid, backend_type FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [database],
      )
      const reading: BackendReading = new Map()
      for (const { pid, backend_type } of rows) {
        const ticks = processTicks(pid)
        if (ticks) reading.set(`${pid}:${ticks.startedAt}`, { ...ticks, pid, type: backend_type })
      }
      return reading
    },
    close: () => client.end(),
  }
}
