/**
 * `npm run bench:cpu`: CPU time per request of the partner API, measured from outside the processes
 * (/proc), beside a bare node:http server measured the same way in the same run.
 *
 * The data set of `bench:platform` (BENCH_RECORDINGS recordings, default 1,000,000, all in the first of
 * BENCH_ENTERPRISES enterprises over its BENCH_DEVICES devices, fixed seed), seeded by the same child
 * (bench-server.ts, here through cpu-server.ts). Each scenario sends a fixed number of requests
 * (BENCH_CPU_REQUESTS, default 20,000) with autocannon at BENCH_CONNECTIONS connections (32), their bodies
 * sealed beforehand, each with a fresh nonce. CPU time is utime + stime of /proc/<pid>/stat (clock ticks,
 * 10 ms; stime, the kernel's part, is also given as a share) read before and after the requests: of the
 * platform's process, and on PostgreSQL of the bench database's backends too (named by pg_stat_activity
 * before and after: a backend read both times counts its difference, one that appeared between the
 * readings all its time; one that ended between them is lost, and counted in a note). On PGlite the
 * platform's process holds the database too. The bare node:http server (bare-server.ts, its own child
 * process) answers the same request bodies with a fixed token-sized JSON body. After a warm-up of both,
 * BENCH_CPU_ROUNDS rounds (3) interleave the two: bare, platform, bare, platform…; the report gives min /
 * median / max µs per request and the ratio platform ÷ bare. On PostgreSQL the token, query and callback
 * scenarios also run, in the same rounds, on the floor server (floor-server.ts): each request's own work on
 * bare node:http through the platform's own statements, the least it can cost with its data in PostgreSQL.
 *
 * Scenarios: token, the filtered query (deviceUid + the year 2025) page 1 and page 50, callback (any
 * recording of the enterprise: answered 2000), the change feed (its last 100 changes) and a media range
 * read (64 KiB windows of a 4 MiB file stored through the admin API, read through its signed link).
 * BENCH_CPU_SCENARIOS=token,query,… runs only the scenarios whose names start with those words.
 *
 * BENCH_CPU_PROFILE=<directory>: after the rounds, one more run of the first scenario chosen with V8's CPU
 * profiler on the platform's main thread (sampling every BENCH_PROFILE_INTERVAL_US µs, default 1000); the
 * profile is kept there and its self time summed by package in the section.
 */
import { mkdirSync } from 'node:fs'
import { AdminClient } from '@earshot/platform/admin-client'
import { PartnerOperation, type PartnerOperationSpec } from '@earshot/protocol'
import { type ScratchDatabase, scratchPostgresDatabase } from '@earshot/test-kit/backends'
import autocannon from 'autocannon'
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
  postgresCpuTicks,
  publishSection,
  sectionText,
  withCleanup,
} from '../bench-support.js'
import { type RunningChild, startChild } from '../child.js'
import type { BareServerReady } from './bare-server.js'
import { type Partner, partnerRequests, partnersOf } from './bench-partners.js'
import type { BenchServerReady, BenchServerSpec, DeviceMatches } from './bench-server.js'
import type { ProfileWritten } from './child-profiler.js'
import {
  type BackendDelta,
  type BackendReading,
  backendDelta,
  backendReader,
  CLOCK_TICKS_PER_SECOND,
  type ProcessTicks,
  processTicks,
} from './cpu-proc.js'
import type { FloorServerSpec } from './floor-server.js'
import { type PreparedRequest, RequestPool } from './load.js'
import { type ProfileSummary, summarizeProfile } from './media-profile.js'
import { generatedBytes } from './media-source.js'
import { checkPlan, type DatasetPlan, DEFAULT_SEED } from './seed-data.js'

const TARGET_RECORDINGS = 1_000_000
const PAGE_SIZE = 20
const DEEP_PAGE = 50
const FEED_PAGE = 100
const MEDIA_BYTES = 4 * 1024 * 1024
const MEDIA_WINDOW = 64 * 1024
/** The filtered queries' window: the year the seed's recordings fall in. */
const YEAR_RANGE = { startTime: '2025-01-01T00:00:00Z', endTime: '2026-01-01T00:00:00Z' } as const

const plan: DatasetPlan = {
  recordings: integerSetting('BENCH_RECORDINGS', TARGET_RECORDINGS),
  enterprises: integerSetting('BENCH_ENTERPRISES', 10),
  devices: integerSetting('BENCH_DEVICES', 5000),
  seed: DEFAULT_SEED,
  layout: 'first',
}
checkPlan(plan)
const requests = integerSetting('BENCH_CPU_REQUESTS', 20_000)
const rounds = integerSetting('BENCH_CPU_ROUNDS', 3)
const connections = integerSetting('BENCH_CONNECTIONS', 32)
const warmupRequests = Math.max(2000, Math.round(requests / 4))
const profileDir = process.env.BENCH_CPU_PROFILE || undefined
const scenarioFilter = (process.env.BENCH_CPU_SCENARIOS || '')
  .split(',')
  .map((word) => word.trim())
  .filter(Boolean)
const backends = backendsSetting()
cleanUpOnInterrupt()

const { issueToken, queryRecordings, readChanges, confirmReceipt, fetchAudio } = PartnerOperation

interface Sent {
  /** From the first request to the last response. */
  seconds: number
  /** The run on the system's monotonic clock (as V8's CPU profiles time their samples), µs. */
  monotonicMicros: { from: number; to: number }
  responses: number
  /** Responses other than HTTP 2xx with code 2000, connection errors and timeouts. */
  errors: number
  samples: string[]
  madeLive: number
}

const OK_PREFIX = '{"code":2000,'
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n)

/** Bodies for `amount` requests (and a few spare), sealed now. */
function filledPool(make: () => PreparedRequest, amount: number): RequestPool {
  const pool = new RequestPool(make)
  pool.fill(amount + connections * 2)
  return pool
}

/** `amount` of the scenario's requests at `connections` connections, bodies from a pool filled beforehand. */
async function send(url: string, scenario: Scenario, amount: number, pool: RequestPool): Promise<Sent> {
  const { path, method } = scenario
  let responses = 0
  let failed = 0
  const samples: string[] = []
  const started = performance.now()
  const from = monotonicMicros()
  let lastResponse = started
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url: `${url}${path}`,
        connections,
        amount,
        timeout: 30,
        requests: [
          {
            method,
            path,
            headers: method === 'POST' ? { 'content-type': 'application/json' } : {},
            setupRequest: (request) => {
              const { body, headers } = pool.take()
              if (method === 'POST') request.body = body
              request.headers = { ...request.headers, ...headers }
              return request
            },
            onResponse: (status, body) => {
              responses++
              lastResponse = performance.now()
              // A range read is answered 206 with the bytes; bare node:http answers every request alike.
              if (status >= 200 && status <= 299 && body.startsWith(OK_PREFIX)) return
              if (method === 'GET' && status === 206) return
              failed++
              if (samples.length < 3) samples.push(`HTTP ${status}: ${body.slice(0, 200)}`)
            },
          },
        ],
      },
      (error: unknown, done: autocannon.Result) => (error ? reject(error) : resolve(done)),
    )
  })
  const to = monotonicMicros()
  pool.fill(0)
  return {
    seconds: (lastResponse - started) / 1000,
    monotonicMicros: { from, to },
    responses,
    errors: failed + result.errors,
    samples,
    madeLive: pool.madeLive,
  }
}

/** A reading of everything measured: the server's process, and the database's backends on PostgreSQL. */
interface Reading {
  server: ProcessTicks
  backends?: BackendReading
  /** Every process named postgres on this machine, ticks by pid (a cross-check: the server's helpers too). */
  allPostgres?: Map<number, number> | undefined
}

interface Run {
  sent: Sent
  /** µs per response of the server's process, of the backends, and of the two. */
  server: number
  /** The share of the server process's time spent in the kernel (stime). */
  serverKernelShare: number
  backends?: number
  total: number
  allPostgres?: number
  delta?: BackendDelta
}

type Reader = () => Promise<Reading>

/**
 * The ticks every postgres process used between two readings, one that started meanwhile all its time;
 * undefined when one ended meanwhile, which takes its time with it.
 */
function allPostgresTicks(before?: Map<number, number>, after?: Map<number, number>): number | undefined {
  if (!before || !after || [...before.keys()].some((pid) => !after.has(pid))) return undefined
  let ticks = 0
  for (const [pid, n] of after) ticks += n - (before.get(pid) ?? 0)
  return ticks
}

function childReader(child: RunningChild<unknown>, backendsRead?: () => Promise<BackendReading>): Reader {
  return async () => {
    const backends = await backendsRead?.()
    const server = processTicks(child.pid)
    if (!server) throw new Error(`process ${child.pid} is gone`)
    return {
      server,
      ...(backends && { backends, allPostgres: postgresCpuTicks() }),
    }
  }
}

async function measuredRun(read: Reader, url: string, scenario: Scenario): Promise<Run> {
  // Bodies are sealed before the first reading, so that the sealing is in neither process's figure.
  const pool = filledPool(scenario.make, requests)
  const before = await read()
  const sent = await send(url, scenario, requests, pool)
  const after = await read()
  const perRequest = (ticks: number) => (ticks * 1e6) / CLOCK_TICKS_PER_SECOND / sent.responses
  const serverTicks = after.server.ticks - before.server.ticks
  const server = perRequest(serverTicks)
  const serverKernelShare = (after.server.kernelTicks - before.server.kernelTicks) / serverTicks
  if (!before.backends || !after.backends) return { sent, server, serverKernelShare, total: server }
  const delta = backendDelta(before.backends, after.backends)
  const backends = perRequest(delta.ticks)
  const allTicks = allPostgresTicks(before.allPostgres, after.allPostgres)
  const allPostgres = allTicks === undefined ? undefined : perRequest(allTicks)
  return { sent, server, serverKernelShare, backends, total: server + backends, delta, allPostgres }
}

interface Scenario {
  name: string
  /** The operation's, as its contract gives it. */
  method: PartnerOperationSpec['method']
  /** The operation's path (a media link's, for fetchAudio). */
  path: string
  make: () => PreparedRequest
  /** Also measured on the floor server (floor-server.ts), where there is one: the token, query and callback. */
  floor?: boolean
}

/** The floor server and its reader, on PostgreSQL. */
interface Floor {
  url: string
  read: Reader
}

interface ScenarioReport {
  name: string
  bare: Run[]
  platform: Run[]
  floor?: Run[]
}

interface BackendReport {
  backend: Backend
  setup: string
  scenarios: ScenarioReport[]
  profile?: { scenario: string; run: Run; summary: ProfileSummary }
  notes: string[]
}

async function measureBackend(backend: Backend): Promise<BackendReport> {
  let scratch: ScratchDatabase | undefined
  if (backend === 'postgres') scratch = await scratchPostgresDatabase()
  const children: RunningChild<unknown>[] = []
  let closeReader: (() => Promise<void>) | undefined
  return withCleanup(
    async () => {
      for (const child of children) await child.stop()
      await closeReader?.()
      await scratch?.drop()
    },
    async () => {
      log(`${backend}: starting the platform and seeding ${format(plan.recordings)} recordings`)
      const spec: BenchServerSpec = { backend, plan, ...(scratch && { databaseUrl: scratch.url }) }
      const platform = await startChild<BenchServerReady>(new URL('./cpu-server.js', import.meta.url).href, {
        BENCH_SERVER_SPEC: JSON.stringify(spec),
      })
      children.push(platform)
      const bare = await startChild<BareServerReady>(new URL('./bare-server.js', import.meta.url).href, {})
      children.push(bare)

      let backendsRead: (() => Promise<BackendReading>) | undefined
      let floor: Floor | undefined
      if (scratch) {
        const reader = await backendReader(
          process.env.DATABASE_URL as string,
          new URL(scratch.url).pathname.slice(1),
        )
        closeReader = reader.close
        backendsRead = reader.read
        const spec: FloorServerSpec = { databaseUrl: scratch.url, enterprises: platform.ready.enterprises }
        const child = await startChild<BareServerReady>(new URL('./floor-server.js', import.meta.url).href, {
          BENCH_FLOOR_SPEC: JSON.stringify(spec),
        })
        children.push(child)
        floor = { url: child.ready.url, read: childReader(child, reader.read) }
      }
      const readPlatform = childReader(platform, backendsRead)
      const readBare = childReader(bare)
      return measureScenarios(backend, platform, bare, readPlatform, readBare, floor)
    },
  )
}

async function measureScenarios(
  backend: Backend,
  platform: RunningChild<BenchServerReady>,
  bare: RunningChild<BareServerReady>,
  readPlatform: Reader,
  readBare: Reader,
  floor: Floor | undefined,
): Promise<BackendReport> {
  const { ready } = platform
  const partners = await partnersOf(ready.partnerUrl, ready.enterprises)
  const chosen = (await scenariosOf(ready, partners)).filter(
    (scenario) =>
      scenarioFilter.length === 0 || scenarioFilter.some((word) => scenario.name.startsWith(word)),
  )
  const reports: ScenarioReport[] = []
  for (const scenario of chosen) {
    log(`${backend}: ${scenario.name}`)
    reports.push(
      await measureScenario(
        scenario,
        ready.partnerUrl,
        bare.ready.url,
        readPlatform,
        readBare,
        scenario.floor ? floor : undefined,
      ),
    )
  }
  const profiled = chosen[0]
  const profile =
    profileDir && profiled ? await profileScenario(backend, profiled, platform, readPlatform) : undefined
  return {
    backend,
    setup: `${ready.databaseVersion.split(',')[0]}. Seeded ${format(plan.recordings)} recordings in ${format(ready.seedSeconds, 1)} s, then VACUUM ANALYZE and CHECKPOINT in ${format(ready.vacuumSeconds, 1)} s.${backendTypesLine(reports)}`,
    scenarios: reports,
    ...(profile && { profile }),
    notes: notesOf(reports),
  }
}

/**
 * After a warm-up of each (JIT, connection pools, caches; not measured), rounds alternating bare, the
 * floor server where given, and the platform.
 */
async function measureScenario(
  scenario: Scenario,
  url: string,
  bareUrl: string,
  readPlatform: Reader,
  readBare: Reader,
  floor: Floor | undefined,
): Promise<ScenarioReport> {
  for (const target of [bareUrl, floor?.url, url]) {
    if (target) await send(target, scenario, warmupRequests, filledPool(scenario.make, warmupRequests))
  }
  const report: ScenarioReport = { name: scenario.name, bare: [], platform: [], ...(floor && { floor: [] }) }
  const described = (run: Run) =>
    `${format(run.server, 1)}${run.backends === undefined ? '' : ` + backends ${format(run.backends, 1)}`} µs`
  for (let round = 0; round < rounds; round++) {
    const bareRun = await measuredRun(readBare, bareUrl, scenario)
    const floorRun = floor && (await measuredRun(floor.read, floor.url, scenario))
    const platformRun = await measuredRun(readPlatform, url, scenario)
    report.bare.push(bareRun)
    if (floorRun) report.floor?.push(floorRun)
    report.platform.push(platformRun)
    log(
      `  round ${round + 1}: bare ${format(bareRun.total, 1)} µs,${floorRun ? ` floor ${described(floorRun)},` : ''} platform ${described(platformRun)} per request (${format(platformRun.sent.responses / platformRun.sent.seconds)} requests/s)`,
    )
  }
  return report
}

/** One more run of the scenario with V8's CPU profiler on the platform's main thread. */
async function profileScenario(
  backend: Backend,
  scenario: Scenario,
  platform: RunningChild<BenchServerReady>,
  readPlatform: Reader,
): Promise<NonNullable<BackendReport['profile']>> {
  mkdirSync(profileDir as string, { recursive: true })
  log(`${backend}: profiling the platform (V8 CPU profiler, main thread): ${scenario.name}`)
  await platform.ask('profile-start', 'profiling')
  const run = await measuredRun(readPlatform, platform.ready.partnerUrl, scenario)
  const { path } = await platform.ask<ProfileWritten>('profile-stop', 'profiled')
  log(`  profile: ${path}`)
  return { scenario: scenario.name, run, summary: summarizeProfile(path, run.sent.monotonicMicros, 15) }
}

/** The scenarios, each request's body sealed by its `make`. */
async function scenariosOf(ready: BenchServerReady, partners: Partner[]): Promise<Scenario[]> {
  const first = partners[0] as Partner
  const holders = partners.filter((p) => p.recordings > 0)
  const callbackIds = holders.reduce((sum, p) => sum + p.callbackAudioIds.length, 0)
  return [
    {
      name: `token (round robin over ${partners.length} enterprises)`,
      method: issueToken.method,
      path: issueToken.path,
      make: partnerRequests(partners, (partner) => ({
        plaintext: {},
        beside: { enterpriseId: partner.enterpriseId },
        bearer: false,
      })),
      floor: true,
    },
    ...(await queryScenarios(first)),
    {
      name: `callback (${format(callbackIds)} audioIds of existing recordings in turn)`,
      method: confirmReceipt.method,
      path: confirmReceipt.path,
      make: partnerRequests(holders, (partner, n) => ({
        plaintext: { audioId: partner.callbackAudioIds[n % partner.callbackAudioIds.length] as string },
        bearer: true,
      })),
      floor: true,
    },
    await feedScenario(first),
    await mediaScenario(ready, partners[partners.length - 1] as Partner),
  ]
}

/** The filtered query, page 1 on ordinary devices and page DEEP_PAGE on busy ones. */
async function queryScenarios(first: Partner): Promise<Scenario[]> {
  const deviceQuery = (devices: DeviceMatches[], page: number) =>
    partnerRequests([first], (_, n) => ({
      plaintext: {
        deviceUid: (devices[n % devices.length] as DeviceMatches).deviceUid,
        ...YEAR_RANGE,
        page,
        size: PAGE_SIZE,
      },
      bearer: true,
    }))
  const scenarios: Scenario[] = []
  for (const [devices, page, kind] of [
    [first.quiet, 1, 'ordinary'],
    [first.busy, DEEP_PAGE, 'busy'],
  ] as const) {
    const sample = await first.client.queryAudios({
      deviceUid: (devices[0] as DeviceMatches).deviceUid,
      ...YEAR_RANGE,
      page,
      size: PAGE_SIZE,
    })
    scenarios.push({
      name: `query: deviceUid + the year 2025, page ${page}, size ${PAGE_SIZE} (${devices.length} ${kind} devices in turn; ${sample.items.length} items, total ${format(sample.total)} on the first)`,
      method: queryRecordings.method,
      path: queryRecordings.path,
      make: deviceQuery(devices, page),
      floor: true,
    })
  }
  return scenarios
}

/**
 * The change feed's last FEED_PAGE changes. A cursor past the changes numbered so far is refused: each
 * read numbers a batch, so the first change is read until the cursor is accepted and its page is full.
 */
async function feedScenario(first: Partner): Promise<Scenario> {
  const feedCursor = Buffer.from(`2:${Math.max(0, first.recordings - FEED_PAGE)}`).toString('base64url')
  const feedItems = Math.min(FEED_PAGE, first.recordings)
  for (let attempt = 0; ; attempt++) {
    const page = await first.client.changes({ cursor: feedCursor, size: FEED_PAGE }).catch(() => undefined)
    if (page?.items.length === feedItems) break
    if (attempt > first.recordings / 1000 + 100) throw new Error('the change feed never reached its end')
    await first.client.changes({ size: 1 })
  }
  return {
    name: `change feed: the last ${feedItems} changes (cursor at seq ${format(Math.max(0, first.recordings - FEED_PAGE))}, size ${FEED_PAGE})`,
    method: readChanges.method,
    path: readChanges.path,
    make: partnerRequests([first], () => ({
      plaintext: { cursor: feedCursor, size: FEED_PAGE },
      bearer: true,
    })),
  }
}

/**
 * A media range read: a recording of `owner` (an enterprise the other scenarios do not read) given
 * MEDIA_BYTES of stored audio through the admin API; its link, as a query answers it, read MEDIA_WINDOW
 * bytes at a time at successive offsets.
 */
async function mediaScenario(ready: BenchServerReady, owner: Partner): Promise<Scenario> {
  const admin = new AdminClient(ready.adminUrl, ready.adminToken)
  const audioId = 'cpu-bench-media'
  await admin.call('ingestRecording', {
    params: { enterpriseId: owner.enterpriseId },
    body: {
      audioId,
      deviceUid: 'cpu-bench-device',
      title: 'CPU bench',
      recordedAt: '2026-11-01T08:00:00Z',
      denoiseUrl: 'https://cdn.example.com/cpu-bench.wav',
      recordDuration: 60_000,
    },
  })
  await admin.uploadAudio(owner.enterpriseId, audioId, generatedBytes(MEDIA_BYTES, 1).chunks, {
    contentType: 'audio/wav',
  })
  const { items } = await owner.client.queryAudios({ audioId, page: 1, size: 1 })
  const link = items[0]?.data.denoiseUrl
  if (!link) throw new Error(`no link to the stored audio of ${audioId}`)
  const { pathname, search } = new URL(link)
  const windows = MEDIA_BYTES / MEDIA_WINDOW
  let n = 0
  return {
    name: `media: ${format(MEDIA_WINDOW / 1024)} KiB ranges of a ${format(MEDIA_BYTES / 1024 / 1024)} MiB stored file, in turn (GET with Range)`,
    method: fetchAudio.method,
    path: `${pathname}${search}`,
    make: () => {
      const start = (n++ % windows) * MEDIA_WINDOW
      return { body: Buffer.alloc(0), headers: { range: `bytes=${start}-${start + MEDIA_WINDOW - 1}` } }
    },
  }
}

/** Backend types read at the end of the measured runs, each at its most. */
function backendTypesLine(reports: ScenarioReport[]): string {
  const types = new Map<string, number>()
  for (const report of reports) {
    for (const run of report.platform) {
      for (const [type, n] of Object.entries(run.delta?.types ?? {})) {
        types.set(type, Math.max(types.get(type) ?? 0, n))
      }
    }
  }
  const line = [...types].map(([type, n]) => `up to ${n} × ${type}`).join(', ')
  return line ? ` The bench database's backends read at the end of a measured run: ${line}.` : ''
}

/** Errors, bodies sealed during the runs, and backends that came or went during them. */
function notesOf(reports: ScenarioReport[]): string[] {
  const notes: string[] = []
  for (const report of reports) {
    for (const [side, runs] of [
      ['bare node:http', report.bare],
      ['floor', report.floor ?? []],
      ['platform', report.platform],
    ] as const) {
      const errors = runs.reduce((sum, run) => sum + run.sent.errors, 0)
      if (errors > 0) {
        notes.push(
          `**${report.name}, ${side}: ${errors} errors** (e.g. \`${runs.flatMap((run) => run.sent.samples)[0] ?? ''}\`)`,
        )
      }
      const madeLive = runs.reduce((sum, run) => sum + run.sent.madeLive, 0)
      if (madeLive > 0) notes.push(`${report.name}, ${side}: ${madeLive} bodies sealed during the runs`)
    }
    const vanished = report.platform.reduce((sum, run) => sum + (run.delta?.vanished ?? 0), 0)
    const appeared = report.platform.reduce((sum, run) => sum + (run.delta?.appeared ?? 0), 0)
    if (vanished + appeared > 0) {
      notes.push(
        `${report.name}: backends that appeared during the measured runs: ${appeared} (all their time counted); that ended: ${vanished} (their time since the first reading is not counted)`,
      )
    }
  }
  return notes
}

const µs = (n: number) => format(n, n < 100 ? 1 : 0)
/** The cross-check's median over the runs it was read in. */
function allPostgresOf(runs: Run[]): string {
  const read = runs.flatMap((run) => (run.allPostgres === undefined ? [] : [run.allPostgres]))
  return read.length > 0 ? µs(median(read)) : '–'
}
const spread = (values: number[]) =>
  `${µs(Math.min(...values))} / **${µs(median(values))}** / ${µs(Math.max(...values))}`

/** The ratio of each round's figure to its partner's: median (range). */
function ratioOf(runs: Run[], to: Run[]): string {
  const ratios = runs.map((run, i) => run.total / (to[i] as Run).total)
  return `${format(median(ratios), 1)}x (${format(Math.min(...ratios), 1)}–${format(Math.max(...ratios), 1)})`
}

/** What the floor server measured beside the token, the query and the callback, where it ran. */
function floorLines(scenarios: ScenarioReport[]): string[] {
  const rows = scenarios.flatMap(({ name, bare, platform, floor }) =>
    floor
      ? [
          `| ${name} | ${spread(floor.map((run) => run.server))} | ${spread(floor.map((run) => run.backends ?? Number.NaN))} | ${spread(floor.map((run) => run.total))} | ${ratioOf(floor, bare)} | ${ratioOf(platform, floor)} |`,
        ]
      : [],
  )
  if (rows.length === 0) return []
  return [
    '',
    "The floors, measured in the same rounds (floor-server.ts): bare node:http doing each request's own work with no framework, schema, hook, metric or log — parse the body, check the bearer token, open the envelope, record its nonce through the platform's replay guard, then sign a token with the platform's signer, read the page and its total with the platform's statement and seal them, or record the receipt with the platform's batched statement, and answer.",
    '',
    '| scenario | floor process µs | floor backends µs | floor total µs | floor ÷ bare | platform ÷ floor |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows,
  ]
}

function renderBackend(report: BackendReport): string {
  const postgres = report.backend === 'postgres'
  const lines = [
    postgres ? '### PostgreSQL' : '### PGlite, in memory (`memory://`), inside the platform process',
    '',
    report.setup,
    '',
    postgres
      ? '| scenario | bare node:http µs | platform process µs | its PostgreSQL backends µs | platform + backends µs | platform ÷ bare | all postgres processes µs | in the kernel: bare / platform process | platform requests/s |'
      : '| scenario | bare node:http µs | platform process µs (PGlite included) | platform ÷ bare | in the kernel: bare / platform process | platform requests/s |',
    postgres ? '|---|---:|---:|---:|---:|---:|---:|---:|---:|' : '|---|---:|---:|---:|---:|---:|',
  ]
  for (const scenario of report.scenarios) {
    const bare = scenario.bare.map((run) => run.total)
    const total = scenario.platform.map((run) => run.total)
    const ratio = ratioOf(scenario.platform, scenario.bare)
    const rate = format(median(scenario.platform.map((run) => run.sent.responses / run.sent.seconds)))
    const kernel = [scenario.bare, scenario.platform]
      .map((runs) => `${format(100 * median(runs.map((run) => run.serverKernelShare)))}%`)
      .join(' / ')
    lines.push(
      postgres
        ? `| ${scenario.name} | ${spread(bare)} | ${spread(scenario.platform.map((run) => run.server))} | ${spread(scenario.platform.map((run) => run.backends ?? Number.NaN))} | ${spread(total)} | ${ratio} | ${allPostgresOf(scenario.platform)} | ${kernel} | ${rate} |`
        : `| ${scenario.name} | ${spread(bare)} | ${spread(total)} | ${ratio} | ${kernel} | ${rate} |`,
    )
  }
  lines.push(...floorLines(report.scenarios))
  if (report.profile) {
    const { scenario, run, summary } = report.profile
    lines.push(
      '',
      `Profile of the platform, ${scenario}: one more run of ${format(requests)} of its requests after the rounds, with V8's CPU profiler (the \`--cpu-prof\` sampler, started through the inspector so that the seeding is not in the profile) on its main thread, its samples taken while the requests ran: ${µs(run.server)} µs per request in the platform process while profiled. Samples of ${format(summary.seconds, 1)} s; the main thread was idle ${format(100 * summary.idleShare)}% of it. The sampler reads the wall clock: a main thread descheduled inside a system call (the load generator shares these cores) counts against that call, so a call such as \`writev\` weighs more here than in the CPU time; ${format(100 * run.serverKernelShare)}% of the platform's CPU time in this run was the kernel's. Self time by package, share of the non-idle time:`,
      '',
      ...summary.areas.map((area) => `- ${area.name}: ${format(100 * area.share, 1)}%`),
      '',
      'Top functions by self time:',
      '',
      ...summary.top.map((fn) => `- ${format(100 * fn.share, 1)}% \`${fn.name}\``),
    )
  }
  if (report.notes.length > 0) lines.push('', ...report.notes.map((note) => `Note: ${note}.`))
  return lines.join('\n')
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const scale =
  plan.recordings < TARGET_RECORDINGS
    ? ` **Reduced scale** (the target is ${format(TARGET_RECORDINGS)} recordings).`
    : ''
const section = sectionText(
  [
    `Measured ${machine}. The data set of \`bench:platform\`: ${format(plan.recordings)} recordings, all in one of ${format(plan.enterprises)} enterprises, over its ${format(plan.devices)} devices (fixed seed).${scale}`,
    `CPU time per request measured from outside: utime + stime of /proc/<pid>/stat (clock ticks of 10 ms) read before and after ${format(requests)} requests (stime, the kernel's part, also shown as a share) sent by autocannon at ${connections} connections from the bench process, bodies sealed beforehand, each with a fresh nonce. The platform (rate limit off, logging silent) and the bare node:http baseline (answers the same bodies with a fixed token-sized JSON body) each run in a child process. On PostgreSQL the bench database's backends count with the platform: named by pg_stat_activity before and after each run (a backend read both times counts its difference, one that appeared all its time; one that ended between the readings is lost); the server's other processes (WAL writer, checkpointer…) are not in that figure, but are in the "all postgres processes" cross-check (every process named postgres on the machine, the median of the runs in which none of them ended; – when one ended in every run). On PGlite the platform's process holds the database. After a warm-up of ${format(warmupRequests)} requests to each, ${rounds} rounds interleave bare and platform; min / **median** / max µs per request of the rounds, and the median (range) of the rounds' ratios platform ÷ bare, all CPU counted. Queries use the year 2025 (${YEAR_RANGE.startTime} ≤ recordedAt < ${YEAR_RANGE.endTime}); page 1 on ordinary devices, page ${DEEP_PAGE} on busy ones. The media range read asks for ${format(MEDIA_WINDOW / 1024)} KiB windows in turn with \`Range\` and no body; bare node:http answers it with the same token-sized body as the rest (the platform's answer is ${format(MEDIA_WINDOW / 1024)} KiB).`,
    ...reports.map(renderBackend),
  ],
  skipped,
)
publishSection('cpu', section, {
  heading: '## Platform: CPU time per request (`npm run bench:cpu`)',
  after: '<!-- bench:platform-large:end -->',
})
const errors = reports.reduce(
  (sum, report) =>
    sum +
    report.scenarios.reduce(
      (n, scenario) =>
        n +
        [...scenario.bare, ...(scenario.floor ?? []), ...scenario.platform].filter(
          (run) => run.sent.errors > 0,
        ).length,
      0,
    ),
  0,
)
if (errors > 0) {
  log(`\n${errors} run(s) had errors: see the notes`)
  process.exitCode = 1
}
