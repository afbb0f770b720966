/**
 * `npm run bench:import`: what a large JSON Lines import costs the platform's memory, and how fast the
 * partner API answers right after it, on both backends (BENCH_BACKENDS).
 *
 * For each backend and each size (BENCH_IMPORT_LINES, default 100,000 then 1,000,000 lines), a platform in
 * a child process of its own (import-platform.ts), on a new database (PGlite in a data directory on disk,
 * PostgreSQL in a scratch database), takes one import through the admin API, streamed as it is generated.
 * The child samples its RSS every 50 ms and its heap in use after a forced garbage collection every second;
 * the figures are the peaks over the import less the values just before it.
 *
 * Then QUERIES one-year window queries of one device (EarshotClient, page 1: 20 recordings and the exact
 * total), first right after the import has answered, then again after an explicit ANALYZE of every table
 * (what statistics that caught up give).
 *
 * Targets: the import's memory does not grow with its number of lines (the largest import's heap growth
 * within HEAP_ALLOWANCE of the smallest's), and the queries right after the largest import within
 * QUERY_RATIO of those after ANALYZE (medians).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EarshotClient } from '@earshot/partner'
import { AdminClient } from '@earshot/platform/admin-client'
import { scratchPostgresDatabase } from '@earshot/test-kit/backends'
import {
  type Backend,
  backendsSetting,
  cleanUpOnInterrupt,
  format,
  log,
  machineLine,
  measureBackends,
  ms,
  publishSection,
  sectionText,
  withCleanup,
  yes,
} from '../bench-support.js'
import { startChild } from '../child.js'
import { IMPORTED_DEVICE, IMPORTED_YEAR, importLines } from './import-lines.js'
import type { ImportPlatformReady, MemoryPeak } from './import-platform.js'

const QUERIES = 20
const HEAP_ALLOWANCE_BYTES = 4 * 2 ** 20
const QUERY_RATIO = 2
const ADMIN_TOKEN = 'bench-admin-token-0123456789'
const MiB = (bytes: number) => format(bytes / 2 ** 20, 1)

const sizes = (process.env.BENCH_IMPORT_LINES ?? '100000,1000000').split(',').map((size) => {
  const lines = Number(size)
  if (!Number.isSafeInteger(lines) || lines < 1)
    throw new Error(`BENCH_IMPORT_LINES: ${size} is not a line count`)
  return lines
})
const backends = backendsSetting()
cleanUpOnInterrupt()

interface ImportFigures {
  lines: number
  seconds: number
  rssGrowthBytes: number
  heapGrowthBytes: number
  /** Window query latencies (ms): right after the import, and after ANALYZE. */
  afterImportMs: number[]
  afterAnalyzeMs: number[]
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

async function windowQueries(client: EarshotClient, expected: number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < QUERIES; i++) {
    const started = performance.now()
    const page = await client.queryAudios({ deviceUid: IMPORTED_DEVICE, ...IMPORTED_YEAR })
    times.push(performance.now() - started)
    if (page.total !== expected) throw new Error(`the window query counted ${page.total}, not ${expected}`)
  }
  return times
}

async function measureImport(backend: Backend, lines: number): Promise<ImportFigures> {
  const scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
  const dataDir = mkdtempSync(join(tmpdir(), 'earshot-import-bench-'))
  const child = await startChild<ImportPlatformReady>(
    new URL('./import-platform.js', import.meta.url).href,
    {
      EARSHOT_HOST: '127.0.0.1',
      EARSHOT_PORT: '0',
      EARSHOT_ADMIN_HOST: '127.0.0.1',
      EARSHOT_ADMIN_PORT: '0',
      EARSHOT_ADMIN_TOKEN: ADMIN_TOKEN,
      EARSHOT_PUSH_DISPATCH: '0',
      EARSHOT_RATE_LIMIT: '0',
      EARSHOT_LOG_LEVEL: 'warn',
      EARSHOT_DEMO: '0',
      ...(scratch ? { DATABASE_URL: scratch.url } : { EARSHOT_DATA_DIR: join(dataDir, 'db') }),
    },
    { timeoutMs: 120_000, execArgv: ['--expose-gc'] },
  )
  return withCleanup(
    async () => {
      await child.stop()
      await scratch?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
    async () => {
      const { ready } = child
      const before = await child.ask<MemoryPeak>('reset', 'peak')
      const admin = new AdminClient(ready.adminUrl, ADMIN_TOKEN)
      const seconds = await importLines(admin, ready.enterpriseId, lines)
      const peak = await child.ask<MemoryPeak>('peak', 'peak')
      const client = new EarshotClient({
        baseUrl: ready.partnerUrl,
        enterpriseId: ready.enterpriseId,
        keyVersion: 1,
        secret: ready.secret,
      })
      await client.token() // the token is not what the first query measures
      const expected = Math.floor(lines / 50) + (lines % 50 > 7 ? 1 : 0)
      const afterImportMs = await windowQueries(client, expected)
      await child.ask('analyze', 'analyzed')
      const afterAnalyzeMs = await windowQueries(client, expected)
      const figures: ImportFigures = {
        lines,
        seconds,
        rssGrowthBytes: peak.rssBytes - before.rssBytes,
        heapGrowthBytes: peak.heapAfterGcBytes - before.heapAfterGcBytes,
        afterImportMs,
        afterAnalyzeMs,
      }
      log(
        `  ${format(lines)} lines: ${format(seconds, 1)} s, RSS +${MiB(figures.rssGrowthBytes)} MiB, heap after GC +${MiB(figures.heapGrowthBytes)} MiB; window query ${ms(median(afterImportMs))} ms right after, ${ms(median(afterAnalyzeMs))} ms after ANALYZE`,
      )
      return figures
    },
  )
}

async function measureBackend(backend: Backend) {
  log(`${backend}:`)
  const imports: ImportFigures[] = []
  for (const lines of sizes) imports.push(await measureImport(backend, lines))
  return { backend, imports }
}

function renderBackend({ backend, imports }: { backend: Backend; imports: ImportFigures[] }): string {
  const smallest = imports[0] as ImportFigures
  const largest = imports.at(-1) as ImportFigures
  const heapHolds = largest.heapGrowthBytes <= smallest.heapGrowthBytes + HEAP_ALLOWANCE_BYTES
  const queryRatio = median(largest.afterImportMs) / median(largest.afterAnalyzeMs)
  return [
    backend === 'pglite' ? '### PGlite, data directory on disk' : '### PostgreSQL',
    '',
    '| lines | import (s) | RSS growth (MiB) | heap growth after GC (MiB) | window query right after (ms) | after ANALYZE (ms) |',
    '|---:|---:|---:|---:|---:|---:|',
    ...imports.map(
      (figures) =>
        `| ${format(figures.lines)} | ${format(figures.seconds, 1)} | ${MiB(figures.rssGrowthBytes)} | ${MiB(figures.heapGrowthBytes)} | ${ms(median(figures.afterImportMs))} | ${ms(median(figures.afterAnalyzeMs))} |`,
    ),
    '',
    `Targets: the heap of a ${format(largest.lines)}-line import within ${MiB(HEAP_ALLOWANCE_BYTES)} MiB of a ${format(smallest.lines)}-line one's: ${yes(heapHolds)}; the window query right after the ${format(largest.lines)}-line import within ${QUERY_RATIO}x of the same after ANALYZE: ${yes(queryRatio <= QUERY_RATIO)} (${format(queryRatio, 2)}x).`,
  ].join('\n')
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
publishSection(
  'import',
  sectionText(
    [
      `Measured ${machine}. Each import into a platform of its own, in a child process, on a new database: one streamed JSON Lines request (recordings of 50 devices, one a second). Memory: the child's peaks over the import (RSS sampled every 50 ms; heap in use after a forced garbage collection, every second) less the values just before it. Window query: ${QUERIES} one-year queries of one device (page 1 and its exact total) through EarshotClient, medians.`,
      ...reports.map(renderBackend),
    ],
    skipped,
  ),
  {
    heading: '## A large import: memory, and queries right after (`npm run bench:import`)',
    after: '<!-- bench:feed:end -->',
  },
)
