/**
 * How the push benchmarks (push.bench.ts, push-endpoints.bench.ts) run: the database each backend gets,
 * the platform and receiver children, checkpoints between phases, CPU use, the statistics child once
 * the platform has stopped, and a drain's rate from those statistics.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { openDatabase } from '@earshot/platform/internal'
import { type ScratchDatabase, scratchPostgresDatabase } from '@earshot/test-kit/backends'
import { type Backend, postgresCpuSeconds, withCleanup } from '../bench-support.js'
import { type RunningChild, startChild } from '../child.js'
import type { ImportTiming } from './push-bench-api.js'
import type { PushReceiverReady } from './push-bench-receiver.js'
import type { PushPlatformReady } from './push-platform.js'
import type { DeliveryStats, PushStatsReady, PushStatsSpec } from './push-stats.js'

const ADMIN_TOKEN = 'bench-admin-token-0123456789'

/** Where a backend keeps its data: a PGlite data directory, or a PostgreSQL database. */
export interface Storage {
  dataDir?: string
  databaseUrl?: string
}

/**
 * Runs `measure` on storage of its own: on PostgreSQL a scratch database on the DATABASE_URL server, on
 * PGlite a data directory under the system's temp directory; both go afterwards (as on Ctrl-C).
 */
export async function withPushStorage<T>(
  backend: Backend,
  measure: (storage: Storage) => Promise<T>,
): Promise<T> {
  let scratch: ScratchDatabase | undefined
  let tempDir: string | undefined
  if (backend === 'postgres') scratch = await scratchPostgresDatabase()
  else tempDir = mkdtempSync(join(tmpdir(), 'earshot-push-bench-'))
  const storage: Storage = scratch
    ? { databaseUrl: scratch.url }
    : { dataDir: join(tempDir as string, 'data') }
  return withCleanup(
    async () => {
      await scratch?.drop()
      if (tempDir) rmSync(tempDir, { recursive: true, force: true })
    },
    () => measure(storage),
  )
}

/** Runs `use` with the child, stopped afterwards (as on Ctrl-C). */
export function withRunning<Ready, T>(child: RunningChild<Ready>, use: () => Promise<T>): Promise<T> {
  return withCleanup(() => child.stop(), use)
}

/** The platform as `earshot serve` on `storage`: rate limit off, log level warn, private push URLs allowed. */
export function startPushPlatform(
  storage: Storage,
  execArgv: string[] = [],
): Promise<RunningChild<PushPlatformReady>> {
  return startChild<PushPlatformReady>(
    new URL('./push-platform.js', import.meta.url).href,
    {
      EARSHOT_HOST: '127.0.0.1',
      EARSHOT_PORT: '0',
      EARSHOT_ADMIN_HOST: '127.0.0.1',
      EARSHOT_ADMIN_PORT: '0',
      EARSHOT_ADMIN_TOKEN: ADMIN_TOKEN,
      EARSHOT_PUSH_ALLOW_PRIVATE: '1',
      EARSHOT_PUSH_DISPATCH: '1',
      EARSHOT_RATE_LIMIT: '0',
      EARSHOT_LOG_LEVEL: 'warn',
      EARSHOT_DEMO: '0',
      ...(storage.databaseUrl
        ? { DATABASE_URL: storage.databaseUrl }
        : { DATABASE_URL: '', EARSHOT_DATA_DIR: storage.dataDir as string }),
    },
    { execArgv },
  )
}

/** The receiver, calling back to `platform` over `callbackConnections` keep-alive connections. */
export function startPushReceiver(
  platform: PushPlatformReady,
  callbackConnections: number,
  slowAnswerMs: number,
): Promise<RunningChild<PushReceiverReady>> {
  return startChild<PushReceiverReady>(new URL('./push-bench-receiver.js', import.meta.url).href, {
    BENCH_PUSH_PARTNER_URL: platform.partnerUrl,
    BENCH_PUSH_CALLBACK_CONNECTIONS: String(callbackConnections),
    BENCH_PUSH_SLOW_ANSWER_MS: String(slowAnswerMs),
  })
}

/** The platform left alone `ms` (the previous run's upkeep), then PostgreSQL's buffers written out. */
export async function settle(storage: Storage, ms: number): Promise<void> {
  await sleep(ms)
  await checkpoint(storage)
}

/**
 * Writes out what the earlier phases left in PostgreSQL's buffers, so that no phase pays for another's
 * checkpoint (with synchronous commits, one overlapping a phase slowed it by half).
 */
export async function checkpoint(storage: Storage): Promise<void> {
  if (!storage.databaseUrl) return
  const db = await openDatabase({ databaseUrl: storage.databaseUrl, poolSize: 1 })
  try {
    await db.query('CHECKPOINT')
  } finally {
    await db.close()
  }
}

export interface CpuReading {
  at: number
  cpu: number[]
}

/** CPU time of the children, then of this machine's PostgreSQL processes, µs. */
export async function usageOf(children: RunningChild<unknown>[]): Promise<CpuReading> {
  const usages = await Promise.all(children.map((child) => child.usage()))
  const postgres = postgresCpuSeconds() ?? Number.NaN
  return { at: performance.now(), cpu: [...usages.map((usage) => usage.cpuMicros), postgres * 1e6] }
}

/** CPU use between two readings, % of one core, in the readings' order. */
export function cpuPercent(before: CpuReading, after: CpuReading): number[] {
  const seconds = (after.at - before.at) / 1000
  return after.cpu.map((micros, i) => (100 * (micros - (before.cpu[i] ?? 0))) / 1e6 / seconds)
}

/** The statistics of each target, computed by push-stats.ts once the platform has stopped. */
export async function pushStats(
  storage: Storage,
  targets: PushStatsSpec['enterprises'],
): Promise<Record<string, DeliveryStats>> {
  const spec: PushStatsSpec = { ...storage, enterprises: targets }
  const statsChild = await startChild<PushStatsReady>(new URL('./push-stats.js', import.meta.url).href, {
    BENCH_PUSH_STATS_SPEC: JSON.stringify(spec),
  })
  await statsChild.stop()
  return statsChild.ready.stats
}

/**
 * A drain's window opens at the import's commit (seen as the `{imported}` line, or the first attempt if
 * earlier) and closes at the last confirmation.
 */
export function drainFigures(drain: { imports: ImportTiming[]; stats: DeliveryStats }) {
  const { stats } = drain
  const committed = Math.min(drain.imports[0]?.acked ?? Number.NaN, stats.firstAttempt)
  const seconds = (stats.lastConfirmed - committed) / 1000
  const importSeconds = drain.imports[0]
    ? (drain.imports[0].acked - drain.imports[0].started) / 1000
    : Number.NaN
  return { committed, seconds, confirmedPerSecond: stats.confirmed / seconds, importSeconds }
}
