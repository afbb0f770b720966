/**
 * `npm run bench:retention`: the partner API while a retention run erases, on both backends.
 *
 * For each backend (BENCH_BACKENDS) a platform runs in this process on a database of its own. An enterprise
 * holds BENCH_RETENTION_RECORDINGS recordings (default 9,000) spread evenly over the last 90 days, each with
 * its transcript, and an endpoint that acknowledges every push. Partner queries go on at a steady pace
 * (PACE_PER_SECOND, half from that enterprise, half from another) through three phases:
 *
 * 1. baseline: no erasure;
 * 2. the enterprise's retention set to 30 days: the platform erases the older two thirds in the background,
 *    batch by batch, and pushes each deletion; the phase lasts until the run is complete (every recording
 *    deleted, every deletion pushed and acknowledged);
 * 3. baseline again.
 *
 * The target: the queries' p99 during the run within 1.2x of the baselines' (the two pooled).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { EarshotClient } from '@earshot/partner'
import { loadConfig, type RunningPlatform, startPlatform } from '@earshot/platform'
import { createEnterprise, insertRecordings, type NewRecording } from '@earshot/platform/internal'
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
  ms,
  publishSection,
  sectionText,
  withCleanup,
  yes,
} from '../bench-support.js'

const TARGET_RATIO = 1.2
const PACE_PER_SECOND = 40
const BASELINE_SECONDS = 20
const RETENTION_DAYS = 30
const DAY_MS = 86_400_000

const recordings = integerSetting('BENCH_RETENTION_RECORDINGS', 9000)
const backends = backendsSetting()
cleanUpOnInterrupt()

interface Report {
  backend: Backend
  before: number[]
  during: number[]
  after: number[]
  runSeconds: number
  erased: number
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.ceil(p * values.length) - 1] ?? Number.NaN

async function acknowledgingReceiver(): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.end('{"code":2000}'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

function seedRecordings(): NewRecording[] {
  const now = Date.now()
  return Array.from({ length: recordings }, (_, i) => {
    const text = `words of recording ${i} in the retention bench`
    return {
      audioId: `retention-${i}`,
      deviceUid: `DEV-${i % 50}`,
      title: `retention ${i}`,
      recordedAt: new Date(now - ((i + 0.5) * 90 * DAY_MS) / recordings).toISOString(),
      denoiseUrl: `https://media.example/retention/${i}.mp3`,
      recordDuration: 1000,
      transcript: {
        transcriptId: i + 1,
        transcriptText: text,
        sentences: [{ text, beginTime: 0, endTime: 900 }],
        durationMs: 900,
        wordsCount: 8,
      },
    }
  })
}

/** Queries at a steady pace until `until` resolves (or for `seconds`); each one's latency. */
async function pacedQueries(clients: EarshotClient[], stop: Promise<unknown> | number): Promise<number[]> {
  const latencies: number[] = []
  let done = false
  if (typeof stop === 'number') setTimeout(() => (done = true), stop * 1000)
  else void stop.then(() => (done = true))
  const intervalMs = 1000 / PACE_PER_SECOND
  const inFlight: Promise<void>[] = []
  for (let i = 0; !done; i++) {
    const client = clients[i % clients.length] as EarshotClient
    inFlight.push(
      (async () => {
        const started = performance.now()
        await client.queryAudios({ size: 20, page: 1 + (i % 5) })
        latencies.push(performance.now() - started)
      })(),
    )
    await sleep(intervalMs)
  }
  await Promise.all(inFlight)
  return latencies
}

async function measureBackend(backend: Backend): Promise<Report> {
  const scratch: ScratchDatabase | undefined =
    backend === 'postgres' ? await scratchPostgresDatabase() : undefined
  const dataDir = mkdtempSync(join(tmpdir(), 'earshot-retention-bench-'))
  let platform: RunningPlatform | undefined
  let receiver: Server | undefined
  return withCleanup(
    async () => {
      await platform?.close()
      receiver?.close()
      await scratch?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
    async () => {
      receiver = await acknowledgingReceiver()
      platform = await startPlatform({
        config: {
          ...loadConfig({}),
          port: 0,
          adminPort: 0,
          adminToken: 'bench-admin-token-0123456789',
          logLevel: 'warn',
          rateLimitPerMinute: 0,
          pushAllowPrivate: true,
          databaseUrl: scratch?.url,
          dataDir,
        },
      })
      const { db, recordingEvents } = platform.context
      const { partnerUrl } = platform
      const retained = await createEnterprise(db, 'retained', null)
      const other = await createEnterprise(db, 'other', null)
      log(`  ${backend}: ${format(recordings)} recordings over 90 days`)
      const seeded = seedRecordings()
      for (const [enterprise, list] of [
        [retained, seeded],
        [other, seeded.map((recording) => ({ ...recording, audioId: `other-${recording.audioId}` }))],
      ] as const) {
        for (let start = 0; start < list.length; start += 1000) {
          await db.transaction((tx) =>
            insertRecordings(tx, enterprise.enterpriseId, list.slice(start, start + 1000), recordingEvents),
          )
        }
      }
      await db.query(
        `INSERT INTO endpoints (enterprise_id, url, event_types) VALUES ($1, $2, ARRAY['recording.deleted'])`,
        [retained.enterpriseId, `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/push`],
      )
      const clients = [retained, other].map(
        (credentials) => new EarshotClient({ baseUrl: partnerUrl, ...credentials }),
      )
      for (const client of clients) await client.queryAudios({ size: 20 })

      const before = await pacedQueries(clients, BASELINE_SECONDS)
      const started = performance.now()
      const erased = erasedAll(platform, retained.enterpriseId)
      await platform.context.db.query(
        'UPDATE enterprises SET retention_days = $2, retention_due_at = now() WHERE enterprise_id = $1',
        [retained.enterpriseId, RETENTION_DAYS],
      )
      platform.context.erasures.wake()
      const during = await pacedQueries(clients, erased)
      const runSeconds = (performance.now() - started) / 1000
      const after = await pacedQueries(clients, BASELINE_SECONDS)
      const [left] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM recordings WHERE enterprise_id = $1',
        [retained.enterpriseId],
      )
      log(
        `  ${backend}: p99 before ${ms(percentile(before, 0.99))}, during ${ms(percentile(during, 0.99))}, after ${ms(percentile(after, 0.99))} ms; ${runSeconds.toFixed(1)} s`,
      )
      return { backend, before, during, after, runSeconds, erased: recordings - (left?.n ?? 0) }
    },
  )
}

/** Resolves once the enterprise's retention run is complete: deleted, every deletion pushed and acknowledged. */
async function erasedAll(platform: RunningPlatform, enterpriseId: number): Promise<void> {
  for (;;) {
    await sleep(200)
    const [row] = await platform.context.db.query<{ done: boolean }>(
      `SELECT bool_and(completed_at IS NOT NULL) AND count(*) > 0 AS done FROM erasures WHERE enterprise_id = $1`,
      [enterpriseId],
    )
    if (row?.done) return
  }
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const rows = reports.map((report) => {
  const baseline = percentile([...report.before, ...report.after], 0.99)
  const during = percentile(report.during, 0.99)
  return `| ${report.backend === 'pglite' ? 'PGlite' : 'PostgreSQL'} | ${ms(percentile(report.before, 0.99))} | ${ms(percentile(report.after, 0.99))} | ${ms(during)} | ${format(during / baseline, 2)}x | ${yes(during <= TARGET_RATIO * baseline)} | ${format(report.erased)} in ${format(report.runSeconds, 1)} s | ${ms(percentile(report.during, 0.5))} / ${ms(percentile([...report.before, ...report.after], 0.5))} |`
})
const section = sectionText(
  [
    `Measured ${machine}. An enterprise with ${format(recordings)} recordings spread over 90 days (each with its transcript) and an endpoint acknowledging its deletion pushes; another enterprise with as many. Partner queries (a page of 20) at ${PACE_PER_SECOND}/s, half from each enterprise, for ${BASELINE_SECONDS} s before, during the retention run until it is complete (${RETENTION_DAYS} days: the older two thirds erased in batches of EARSHOT_ERASURE_BATCH, each followed by a rest four times as long, and every deletion pushed and acknowledged), and ${BASELINE_SECONDS} s after. Target: the p99 during the run within ${TARGET_RATIO}x of the baselines' pooled p99.`,
    '| backend | p99 before, ms | p99 after | p99 during the run | ratio | within 1.2x | erased | p50 during / baseline |\n|---|---:|---:|---:|---:|---|---:|---:|\n' +
      rows.join('\n'),
  ],
  skipped,
)
publishSection('retention', section, {
  heading: '## Partner queries during a retention run (`npm run bench:retention`)',
})
