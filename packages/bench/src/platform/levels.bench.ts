/**
 * `npm run bench:levels`: reading an enterprise's service levels through the partner API with BENCH_LEVELS
 * deliveries (default 1,000,000) in its 7-day window, on both backends.
 *
 * For each backend (BENCH_BACKENDS) a platform runs in this process on a database of its own; one statement
 * writes the deliveries, spread evenly over the last 6.9 days, each with a first attempt (90% acknowledged)
 * and a confirmation, as the push queue leaves them. Then, through EarshotClient.levels():
 *
 * 1. the first read, which counts every hour of the window into the rollup (once per enterprise, or after 10
 *    minutes of nobody reading its levels);
 * 2. READS reads, 24 hours and 7 days in turn, one every PACE_MS: a portal's charts refreshing. Reads are
 *    answered from figures at most 10 s old; past 5 s a read starts the next count behind it (the part-hours
 *    at each end of the window, the current hour, and the hours something happened in since the last look;
 *    the instance holds the other hours' counts).
 *
 * The target: the reads' p99 under 50 ms. The counts behind them are timed too (computeLevels, as the reads
 * start them).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { EarshotClient } from '@earshot/partner'
import { loadConfig, type RunningPlatform, startPlatform } from '@earshot/platform'
import { computeLevels, createEnterprise } from '@earshot/platform/internal'
import { type ScratchDatabase, scratchPostgresDatabase } from '@earshot/test-kit/backends'
import {
  type Backend,
  backendsSetting,
  cleanUpOnInterrupt,
  format,
  integerSetting,
  log,
  machineLine,
  measureBackends,
  median,
  ms,
  percentile,
  publishSection,
  sectionText,
  withCleanup,
  yes,
} from '../bench-support.js'

const TARGET_MS = 50
const READS = 300
const PACE_MS = 50
const COUNTS = 5
const ADMIN_TOKEN = 'bench-admin-token-0123456789'

const deliveries = integerSetting('BENCH_LEVELS', 1_000_000)
const backends = backendsSetting()
cleanUpOnInterrupt()

interface Report {
  backend: Backend
  writeSeconds: number
  firstReadMs: number
  readMs: number[]
  countMs: number[]
  storedMs: number[]
}

/** The deliveries of the window, as the push queue leaves them: one statement. */
async function writeDeliveries(platform: RunningPlatform, enterpriseId: number): Promise<number> {
  const started = performance.now()
  const spacingMs = (6.9 * 86_400_000) / deliveries
  await platform.context.db.query(
    `INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, state, due_at, created_at,
                             first_attempt_at, first_attempt_acked, acked_at, confirmed_at)
     SELECT 'bench-' || g, $1, 'bench-audio-' || g, 'recording.audio_ready', 'confirmed', NULL, c,
            c + (g % 997) * interval '1 millisecond', g % 10 <> 0, c + interval '1 second',
            c + interval '1 second' + (g % 3001) * interval '1 millisecond'
       FROM generate_series(1, $2::int) g,
            LATERAL (SELECT now() - g * make_interval(secs => $3::float8 / 1000) AS c) t`,
    [enterpriseId, deliveries, spacingMs],
  )
  await platform.context.db.query('ANALYZE deliveries')
  return (performance.now() - started) / 1000
}

async function measureBackend(backend: Backend): Promise<Report> {
  const scratch: ScratchDatabase | undefined =
    backend === 'postgres' ? await scratchPostgresDatabase() : undefined
  const dataDir = mkdtempSync(join(tmpdir(), 'earshot-levels-bench-'))
  let platform: RunningPlatform | undefined
  return withCleanup(
    async () => {
      await platform?.close()
      await scratch?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
    async () => {
      platform = await startPlatform({
        config: {
          ...loadConfig({}),
          port: 0,
          adminPort: 0,
          adminToken: ADMIN_TOKEN,
          logLevel: 'warn',
          pushDispatch: false,
          rateLimitPerMinute: 0,
          databaseUrl: scratch?.url,
          dataDir,
        },
      })
      const { enterpriseId, secret } = await createEnterprise(platform.context.db, 'levels', null)
      log(`  ${backend}: writing ${format(deliveries)} deliveries`)
      const writeSeconds = await writeDeliveries(platform, enterpriseId)
      const client = new EarshotClient({ baseUrl: platform.partnerUrl, enterpriseId, keyVersion: 1, secret })
      const first = performance.now()
      await client.levels('24h')
      const firstReadMs = performance.now() - first
      const readMs: number[] = []
      for (let i = 0; i < READS; i++) {
        const started = performance.now()
        await client.levels(i % 2 === 0 ? '24h' : '7d')
        readMs.push(performance.now() - started)
        await sleep(PACE_MS)
      }
      const countMs: number[] = []
      const storedMs: number[] = []
      let { rollup } = await computeLevels(platform.context.db, enterpriseId, Date.now())
      for (let i = 0; i < COUNTS; i++) {
        let started = performance.now()
        ;({ rollup } = await computeLevels(platform.context.db, enterpriseId, Date.now(), 70_000, rollup))
        countMs.push(performance.now() - started)
        started = performance.now()
        await computeLevels(platform.context.db, enterpriseId, Date.now())
        storedMs.push(performance.now() - started)
      }
      log(`  ${backend}: reads p50 ${ms(percentile(readMs, 0.5))} p99 ${ms(percentile(readMs, 0.99))} ms`)
      return { backend, writeSeconds, firstReadMs, readMs, countMs, storedMs }
    },
  )
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const rows = reports.map((report) => {
  const p99 = percentile(report.readMs, 0.99)
  return `| ${report.backend === 'pglite' ? 'PGlite' : 'PostgreSQL'} | ${ms(percentile(report.readMs, 0.5))} | ${ms(percentile(report.readMs, 0.95))} | ${ms(p99)} | ${ms(Math.max(...report.readMs))} | ${yes(p99 < TARGET_MS)} | ${ms(median(report.countMs))} | ${ms(median(report.storedMs))} | ${format(report.firstReadMs / 1000, 1)} s |`
})
const section = sectionText(
  [
    `Measured ${machine}. ${format(deliveries)} deliveries of one enterprise in the 7-day window (written in one statement, spread over 6.9 days); ${READS} reads through EarshotClient.levels(), 24 hours and 7 days in turn, one every ${PACE_MS} ms. Target: the reads' p99 under ${TARGET_MS} ms.`,
    '| backend | read p50 ms | p95 | p99 | max | p99 < 50 ms | a count behind the reads, ms (median of 5) | the same by an instance holding no hours, ms | the whole window counted (the first read, or one after 10 min unread) |\n|---|---:|---:|---:|---:|---|---:|---:|---:|\n' +
      rows.join('\n'),
    "A read answers figures at most 10 s old, and starts the next count once they are 5 s old: the part-hours at each end of each window and the current hour, counted from the deliveries, and the complete hours something happened in since the instance's last count, found from the attempts and confirmations since then; every other hour is the one the instance counted before (an instance that holds none reads them as stored by any instance). No statement counts more than 10 minutes of deliveries, so on PGlite, whose one connection each statement holds, a read waits behind one such statement at most.",
  ],
  skipped,
)
publishSection('levels', section, { heading: '## Service levels read (`npm run bench:levels`)' })
