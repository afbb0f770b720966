/**
 * Child process of `platform.bench.ts`: starts the platform on the backend it is given (in-memory PGlite
 * or a PostgreSQL database), seeds the benchmark data set, or a stage of it, and reports its URL,
 * credentials and the query targets to the parent. PGlite lives in one process only, so the data is
 * seeded here for both backends alike.
 */

import { startPlatform } from '@earshot/platform'
import type { EnterpriseCredentials } from '@earshot/platform/internal'
import { createEnterprise, insertRecordings } from '@earshot/platform/internal'
import { TEST_ADMIN_TOKEN, testConfig } from '@earshot/test-kit/backends'
import { serveParent } from '../child.js'
import {
  type DatasetPlan,
  devicesOf,
  QUERY_RANGE,
  recordingChunks,
  recordingsOf,
  TOTAL_WINDOW,
} from './seed-data.js'

export interface BenchServerSpec {
  backend: 'pglite' | 'postgres'
  databaseUrl?: string
  plan: DatasetPlan
  /**
   * The stage to store: the plan's recordings from `from` to before `to` (of plan.recordings, shared out
   * over the enterprises in proportion), the ones before it stored by an earlier stage, with `enterprises`.
   * By default the whole plan.
   */
  stage?: { from: number; to: number; enterprises?: EnterpriseCredentials[] }
}

/** A device, and how many of its recordings fall in QUERY_RANGE. */
export interface DeviceMatches {
  deviceUid: string
  matches: number
}

export interface BenchEnterprise extends EnterpriseCredentials {
  /** Its recordings once the stage is stored. */
  recordings: number
  /** Up to QUERY_DEVICES devices with an ordinary number of recordings (none without recordings). */
  quiet: DeviceMatches[]
  /** Up to QUERY_DEVICES busy devices. */
  busy: DeviceMatches[]
  /** Recordings of the enterprise the callback scenario confirms. */
  callbackAudioIds: string[]
}

/** The exact totals of the first enterprise, counted row by row after seeding. */
export interface TotalChecks {
  /** Its recordings in TOTAL_WINDOW. */
  window: number
  /** A busy device (the first), and how many recordings it holds in all. */
  deviceUid: string
  device: number
}

export interface BenchServerReady {
  type: 'ready'
  partnerUrl: string
  /** The admin API, for a bench that stores audio (cpu.bench.ts). */
  adminUrl: string
  adminToken: string
  databaseVersion: string
  seedSeconds: number
  vacuumSeconds: number
  rssBytes: number
  enterprises: BenchEnterprise[]
  totals: TotalChecks
}

/** Rows per transaction while seeding (insertRecordings itself sends 1000 rows per statement). */
const SEED_TRANSACTION_ROWS = 10_000
/** audioIds the callback scenario confirms in turn, shared out over the enterprises holding recordings. */
const CALLBACK_IDS = 1000
const QUERY_DEVICES = 10

const spec = JSON.parse(process.env.BENCH_SERVER_SPEC ?? 'null') as BenchServerSpec | null
if (!spec) throw new Error('BENCH_SERVER_SPEC is not set: this module is started by platform.bench.js')
const { plan, stage = { from: 0, to: plan.recordings } } = spec

const platform = await startPlatform({
  config: testConfig({
    rateLimitPerMinute: 0,
    logLevel: 'silent',
    dataDir: 'memory://',
    databaseUrl: spec.databaseUrl,
  }),
})
const db = platform.context.db

const credentials: EnterpriseCredentials[] = stage.enterprises ?? []
for (let e = credentials.length; e < plan.enterprises; e++) {
  credentials.push(await createEnterprise(db, `Bench Enterprise ${e + 1}`, null))
}

/** Enterprise index e's share of the plan's first `rows` recordings. */
const heldAt = (e: number, rows: number) => Math.floor((recordingsOf(plan, e) * rows) / plan.recordings)
const stageRows = stage.to - stage.from
const seedStarted = performance.now()
let seeded = 0
let lastReport = seedStarted
for (const [e, { enterpriseId }] of credentials.entries()) {
  for (const chunk of recordingChunks(
    plan,
    e,
    SEED_TRANSACTION_ROWS,
    heldAt(e, stage.from),
    heldAt(e, stage.to),
  )) {
    await db.transaction((tx) => insertRecordings(tx, enterpriseId, chunk, platform.context.recordingEvents))
    seeded += chunk.length
    const now = performance.now()
    if (now - lastReport >= 5000 || seeded === stageRows) {
      lastReport = now
      const seconds = (now - seedStarted) / 1000
      process.stderr.write(
        `  seeding ${spec.backend}: ${seeded.toLocaleString('en-US')} / ${stageRows.toLocaleString('en-US')} recordings (${Math.round((100 * seeded) / stageRows)}%), ${seconds.toFixed(1)} s, ${Math.round(seeded / seconds).toLocaleString('en-US')} rows/s\n`,
      )
    }
  }
}
const seedSeconds = (performance.now() - seedStarted) / 1000

// Fresh statistics for the planner, and a visibility map so counts can use index-only scans, as a table
// that autovacuum has seen would have; then a checkpoint, so that writing out the seed's pages does not
// fall into the measured runs (at 10,000,000 rows it took 81 s).
const vacuumStarted = performance.now()
await db.query('VACUUM ANALYZE')
await db.query('CHECKPOINT')
const vacuumSeconds = (performance.now() - vacuumStarted) / 1000

const count = async (enterpriseId: number, deviceUid: string): Promise<DeviceMatches> => {
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*) AS n FROM recordings
      WHERE enterprise_id = $1 AND device_uid = $2 AND recorded_at >= $3::timestamptz AND recorded_at < $4::timestamptz`,
    [enterpriseId, deviceUid, QUERY_RANGE.startTime, QUERY_RANGE.endTime],
  )
  return { deviceUid, matches: row?.n ?? 0 }
}

const holding = credentials.filter((_, e) => heldAt(e, stage.to) > 0).length
const enterprises: BenchEnterprise[] = []
for (const [e, { enterpriseId, keyVersion, secret }] of credentials.entries()) {
  const { busy, other } = devicesOf(plan, e)
  const ids = await db.query<{ audio_id: string }>(
    'SELECT audio_id FROM recordings WHERE enterprise_id = $1 ORDER BY audio_id LIMIT $2',
    [enterpriseId, Math.ceil(CALLBACK_IDS / holding)],
  )
  const quiet: DeviceMatches[] = []
  for (const deviceUid of other.slice(0, QUERY_DEVICES)) quiet.push(await count(enterpriseId, deviceUid))
  const busiest: DeviceMatches[] = []
  for (const deviceUid of busy.slice(0, QUERY_DEVICES)) busiest.push(await count(enterpriseId, deviceUid))
  enterprises.push({
    enterpriseId,
    keyVersion,
    secret,
    recordings: heldAt(e, stage.to),
    quiet,
    busy: busiest,
    callbackAudioIds: ids.map((row) => row.audio_id),
  })
}

const first = enterprises[0] as BenchEnterprise
const deviceUid = first.busy[0]?.deviceUid ?? ''
const [inWindow] = await db.query<{ n: number }>(
  `SELECT count(*) AS n FROM recordings
    WHERE enterprise_id = $1 AND recorded_at >= $2::timestamptz AND recorded_at < $3::timestamptz`,
  [first.enterpriseId, TOTAL_WINDOW.startTime, TOTAL_WINDOW.endTime],
)
const [ofDevice] = await db.query<{ n: number }>(
  'SELECT count(*) AS n FROM recordings WHERE enterprise_id = $1 AND device_uid = $2',
  [first.enterpriseId, deviceUid],
)
const totals: TotalChecks = { window: inWindow?.n ?? 0, deviceUid, device: ofDevice?.n ?? 0 }
const [version] = await db.query<{ version: string }>('SELECT version()')

serveParent(
  {
    partnerUrl: platform.partnerUrl,
    adminUrl: platform.adminUrl,
    adminToken: TEST_ADMIN_TOKEN,
    databaseVersion: version?.version ?? 'unknown',
    seedSeconds,
    vacuumSeconds,
    rssBytes: process.memoryUsage.rss(),
    enterprises,
    totals,
  } satisfies Omit<BenchServerReady, 'type'>,
  () => platform.close(),
)
