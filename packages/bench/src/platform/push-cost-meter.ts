/**
 * CPU time of a delivery's three parties, read from outside (/proc): the server (the platform process, or
 * the floor's processes), its PostgreSQL backends (the backends of its database; on PGlite the database
 * works inside the server process), and the receiver.
 */
import {
  type BackendReading,
  backendDelta,
  backendReader,
  CLOCK_TICKS_PER_SECOND,
  databaseNameOf,
  processTicks,
} from './cpu-proc.js'

/** CPU µs spent by each party over one measured window. */
export interface CpuSplit {
  server: number
  backends: number
  receiver: number
}

export type BackendReader = Awaited<ReturnType<typeof backendReader>>

export interface Parties {
  servers: number[]
  backends?: BackendReader
  receivers: number[]
}

const micros = (ticks: number) => (ticks * 1e6) / CLOCK_TICKS_PER_SECOND

function ticksOf(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (processTicks(pid)?.ticks ?? Number.NaN), 0)
}

/** Starts a window; the function it resolves with ends it and tells what each party spent in it. */
export async function startWindow(parties: Parties): Promise<() => Promise<CpuSplit>> {
  const backendsBefore: BackendReading | undefined = await parties.backends?.read()
  const servers = ticksOf(parties.servers)
  const receivers = ticksOf(parties.receivers)
  return async () => {
    const split = {
      server: micros(ticksOf(parties.servers) - servers),
      receiver: micros(ticksOf(parties.receivers) - receivers),
    }
    const backendsAfter = await parties.backends?.read()
    const backendTicks =
      backendsBefore && backendsAfter ? backendDelta(backendsBefore, backendsAfter).ticks : 0
    return { ...split, backends: micros(backendTicks) }
  }
}

/** The backends of the database `databaseUrl` names, on the DATABASE_URL server; none on PGlite. */
export async function backendsOf(databaseUrl: string | undefined): Promise<BackendReader | undefined> {
  const server = process.env.DATABASE_URL
  if (!databaseUrl || !server) return undefined
  return backendReader(server, databaseNameOf(databaseUrl))
}
