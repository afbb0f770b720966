/**
 * `npm run bench:retention`: the partner API while a retention run erases, on both backends.
 *
 * For each backend (BENCH_BACKENDS) a platform runs in this process on a database of its own. ROUNDS
 * enterprises each hold BENCH_RETENTION_RECORDINGS recordings (default 3,000) spread evenly over the last 90
 * days, each with its transcript, and an endpoint that acknowledges every push; another enterprise holds as
 * many. Partner queries go on at a steady pace (PACE_PER_SECOND, from every enterprise in turn) through
 * interleaved phases: a baseline with no erasure, then one enterprise's retention set to 30 days (the
 * platform erases the older two thirds in the background and pushes each deletion; the phase lasts until
 * the run is complete: every recording deleted, every deletion pushed and acknowledged), ROUNDS times, and a
 * last baseline.
 *
 * The target: the median of the runs' p99s within 1.2x of the median of the baselines' p99s. For the profile:
 * EARSHOT_ERASURE_BATCH and EARSHOT_ERASURE_RATE set the erasure's pace, and BENCH_RETENTION_PUSH=0 turns the
 * pushes off (a run then lasts until its recordings are deleted).
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
  median,
  ms,
  percentile,
  publishSection,
  sectionText,
  withCleanup,
  yes,
} from '../bench-support.js'

const TARGET_RATIO = 1.2
const PACE_PER_SECOND = 40
const BASELINE_SECONDS = 15
/** Load before the baseline, not counted: the JIT warmed up, the seeding's work settled. */
const WARMUP_SECONDS = 5
const RETENTION_DAYS = 30
const DAY_MS = 86_400_000

const recordings = integerSetting('BENCH_RETENTION_RECORDINGS', 3000)
const ROUNDS = 3
const backends = backendsSetting()
cleanUpOnInterrupt()

interface Report {
  backend: Backend
  /** Each baseline's latencies, ROUNDS + 1 of them. */
  baselines: number[][]
  /** Each run's latencies. */
  runs: number[][]
  runSeconds: number[]
  erased: number
}

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

/** Queries at a steady pace until `stop` resolves (or for `seconds`); each one's latency. */
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
          // The erasure's own settings as the environment gives them (EARSHOT_ERASURE_BATCH, _RATE).
          ...loadConfig({
            EARSHOT_ERASURE_BATCH: process.env.EARSHOT_ERASURE_BATCH,
            EARSHOT_ERASURE_RATE: process.env.EARSHOT_ERASURE_RATE,
          }),
          port: 0,
          adminPort: 0,
          adminToken: 'bench-admin-token-0123456789',
          logLevel: 'warn',
          rateLimitPerMinute: 0,
          pushAllowPrivate: true,
          pushDispatch: process.env.BENCH_RETENTION_PUSH !== '0',
          databaseUrl: scratch?.url,
          dataDir,
        },
      })
      const { db, recordingEvents } = platform.context
      const { partnerUrl } = platform
      const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/push`
      log(`  ${backend}: ${ROUNDS + 1} enterprises of ${format(recordings)} recordings over 90 days`)
      const enterprises = []
      for (let round = 0; round <= ROUNDS; round++) {
        const enterprise = await createEnterprise(db, `retained ${round}`, null)
        const list = seedRecordings().map((recording) => ({
          ...recording,
          audioId: `${round}-${recording.audioId}`,
        }))
        for (let start = 0; start < list.length; start += 1000) {
          await db.transaction((tx) =>
            insertRecordings(tx, enterprise.enterpriseId, list.slice(start, start + 1000), recordingEvents),
          )
        }
        await db.query(
          `INSERT INTO endpoints (enterprise_id, url, event_types) VALUES ($1, $2, ARRAY['recording.deleted'])`,
          [enterprise.enterpriseId, receiverUrl],
        )
        enterprises.push(enterprise)
      }
      const clients = enterprises.map(
        (credentials) => new EarshotClient({ baseUrl: partnerUrl, ...credentials }),
      )
      await pacedQueries(clients, WARMUP_SECONDS)
      const baselines: number[][] = []
      const runs: number[][] = []
      const runSeconds: number[] = []
      for (const retained of enterprises.slice(0, ROUNDS)) {
        baselines.push(await pacedQueries(clients, BASELINE_SECONDS))
        const started = performance.now()
        const erased = erasedAll(platform, retained.enterpriseId)
        await db.query(
          'UPDATE enterprises SET retention_days = $2, retention_due_at = now() WHERE enterprise_id = $1',
          [retained.enterpriseId, RETENTION_DAYS],
        )
        platform.context.erasures.wake()
        runs.push(await pacedQueries(clients, erased))
        runSeconds.push((performance.now() - started) / 1000)
        log(
          `  ${backend}: baseline p99 ${ms(percentile(baselines.at(-1) as number[], 0.99))}, run p99 ${ms(percentile(runs.at(-1) as number[], 0.99))} ms`,
        )
      }
      baselines.push(await pacedQueries(clients, BASELINE_SECONDS))
      const [left] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM recordings')
      const erased = (ROUNDS + 1) * recordings - (left?.n ?? 0)
      return { backend, baselines, runs, runSeconds, erased }
    },
  )
}

/** Resolves once the enterprise's retention run is complete: deleted, every deletion pushed and acknowledged. */
async function erasedAll(platform: RunningPlatform, enterpriseId: number): Promise<void> {
  for (;;) {
    await sleep(200)
    const [row] = await platform.context.db.query<{ done: boolean }>(
      `SELECT bool_and(${process.env.BENCH_RETENTION_PUSH === '0' ? 'deleted_at' : 'completed_at'} IS NOT NULL) AND count(*) > 0 AS done
         FROM erasures WHERE enterprise_id = $1`,
      [enterpriseId],
    )
    if (row?.done) return
  }
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const p99s = (phases: number[][]) => phases.map((latencies) => percentile(latencies, 0.99))
const rows = reports.map((report) => {
  const baseline = median(p99s(report.baselines))
  const during = median(p99s(report.runs))
  const list = (values: number[]) => values.map(ms).join(', ')
  return `| ${report.backend === 'pglite' ? 'PGlite' : 'PostgreSQL'} | ${list(p99s(report.baselines))} | ${list(p99s(report.runs))} | ${ms(baseline)} | ${ms(during)} | ${format(during / baseline, 2)}x | ${yes(during <= TARGET_RATIO * baseline)} | ${format(report.erased)} in ${list(report.runSeconds.map((s) => Math.round(s)))} s |`
})
const section = sectionText(
  [
    `Measured ${machine}. ${ROUNDS + 1} enterprises, each with ${format(recordings)} recordings spread over 90 days (each with its transcript) and an endpoint acknowledging its deletion pushes. Partner queries (a page of 20) at ${PACE_PER_SECOND}/s from every enterprise in turn: ${BASELINE_SECONDS} s with no erasure, then one enterprise's retention set to ${RETENTION_DAYS} days until its run is complete (the older two thirds erased in batches of EARSHOT_ERASURE_BATCH, at most EARSHOT_ERASURE_RATE a second, every deletion pushed and acknowledged), ${ROUNDS} times, and a last baseline. Target: the median of the runs' p99s within ${TARGET_RATIO}x of the median of the baselines' p99s.`,
    "| backend | baselines' p99, ms | runs' p99, ms | baseline (median) | run (median) | ratio | within 1.2x | erased, in |\n|---|---|---|---:|---:|---:|---|---|\n" +
      rows.join('\n'),
    "On PGlite every statement holds the database's one connection, and a batch's transaction holds it from its first statement to its commit: a partner query arriving meanwhile waits for the batch (and for the claims and settlements of the deletions' pushes) to end. On PostgreSQL the two run side by side, and what the run adds is CPU: mostly the deletions' pushes, which EARSHOT_ERASURE_RATE bounds.",
  ],
  skipped,
)
publishSection('retention', section, {
  heading: '## Partner queries during a retention run (`npm run bench:retention`)',
})
