/**
 * `npm run bench:platform [-- --rows N]`: the partner API under load, beside a bare node:http server, on
 * both backends.
 *
 * N recordings (`--rows`, else BENCH_RECORDINGS, default 1,000,000), all in the first of
 * BENCH_ENTERPRISES enterprises (10) over its BENCH_DEVICES devices (5,000): the exact `total` is asked
 * of one enterprise holding all N, and the filtered queries read as many matches per device as when the
 * same rows were spread over the enterprises. The other enterprises hold keys only and take their turn in
 * the token scenario. Measures requests/s and p50/p99 of token, a filtered query (deviceUid + time range,
 * page 1 and page 50, round robin over devices) and callback at BENCH_CONNECTIONS connections (32) for
 * BENCH_DURATION seconds each (10), and, one request at a time, the latency of the exact total for no
 * filter, a time window only and a deviceUid only. BENCH_BACKENDS (default `pglite,postgres`; only
 * `postgres` above 1,000,000 rows, which PGlite would have to hold in memory) picks the backends;
 * PostgreSQL needs DATABASE_URL (a scratch database is created on that server and dropped at the end).
 *
 * Above 1,000,000 rows the figures go to a section of their own, measured twice in one run on one
 * database: once it holds the first 1,000,000 of the N recordings, and again once it has grown to all N;
 * each query and total figure at N is judged against its 1,000,000-row figure of that run.
 *
 * Each server (the platform, the baseline) runs in its own child process; the load generator
 * (autocannon) runs here, fed with request bodies sealed before each measured run.
 */
import { parseArgs } from 'node:util'
import {
  type JsonObject,
  loadKey,
  PartnerOperation,
  type PartnerOperationSpec,
  seal,
} from '@earshot/protocol'
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
import { type RunningChild, startChild } from '../child.js'
import type { BareServerReady } from './bare-server.js'
import {
  eventId,
  openedData,
  type Partner,
  partnerRequests,
  partnersOf,
  sealedPost,
} from './bench-partners.js'
import type { BenchServerReady, BenchServerSpec, DeviceMatches } from './bench-server.js'
import { type PreparedRequest, RequestPool, runScenario, type ScenarioResult } from './load.js'
import { checkPlan, type DatasetPlan, DEFAULT_SEED, QUERY_RANGE, TOTAL_WINDOW } from './seed-data.js'

/** Shares of the bare node:http baseline's requests/s, and the filtered query's p99, per backend (issue 12). */
const TARGET_TOKEN_RATIO: Record<Backend, number> = { postgres: 0.5, pglite: 0.25 }
const TARGET_CALLBACK_RATIO: Record<Backend, number> = { postgres: 0.4, pglite: 0.2 }
const TARGET_QUERY_P99_MS: Record<Backend, number> = { postgres: 25, pglite: 60 }
const TARGET_QUERY_CONNECTIONS = 32
/** The exact total's p50 over TARGET_TOTAL_ROWS rows in one enterprise. */
const TARGET_TOTAL_MS: Record<Backend, number> = { postgres: 20, pglite: 40 }
const TARGET_TOTAL_ROWS = 1_000_000
/** At larger scales, each query and total figure within this factor of the TARGET_TOTAL_ROWS figure. */
const TARGET_SCALE_RATIO = 1.3
const TOTAL_WARMUP = 20
const TOTAL_REPEATS = 200
const DEEP_PAGE = 50
const PAGE_SIZE = 20

const { values: args } = parseArgs({ options: { rows: { type: 'string' } } })
if (args.rows !== undefined && !/^[1-9]\d*$/.test(args.rows))
  throw new Error('--rows must be a whole number ≥ 1')
const plan: DatasetPlan = {
  recordings:
    args.rows === undefined ? integerSetting('BENCH_RECORDINGS', TARGET_TOTAL_ROWS) : Number(args.rows),
  enterprises: integerSetting('BENCH_ENTERPRISES', 10),
  devices: integerSetting('BENCH_DEVICES', 5000),
  seed: DEFAULT_SEED,
  layout: 'first',
}
checkPlan(plan)
const largeScale = plan.recordings > TARGET_TOTAL_ROWS
const seconds = integerSetting('BENCH_DURATION', 10)
const connections = integerSetting('BENCH_CONNECTIONS', 32)
const warmupSeconds = Math.min(3, Math.max(1, Math.round(seconds / 5)))
const backends: Backend[] = largeScale && !process.env.BENCH_BACKENDS ? ['postgres'] : backendsSetting()
cleanUpOnInterrupt()

const { issueToken, queryRecordings, confirmReceipt } = PartnerOperation

/**
 * One query sealed and sent as it is, timed from sealing to the answer's body read (the partner client
 * would add its own checks and parsing to the time); returns the opened answer.
 */
async function timedQuery(partnerUrl: string, partner: Partner, filter: JsonObject) {
  const started = performance.now()
  const reply = await sealedPost(partnerUrl, queryRecordings, partner, filter)
  const milliseconds = performance.now() - started
  return { milliseconds, plaintext: openedData<{ total: number }>(partner, queryRecordings, reply) }
}

interface Row {
  scenario: string
  connections: number
  result: ScenarioResult
  vsBare?: number
}

/** Latencies of requests sent one at a time. */
interface SerialResult {
  p50: number
  p99: number
  errors: number
}

type TotalForm = 'none' | 'window' | 'device'

/** The figures a larger scale is judged on against TARGET_TOTAL_ROWS. */
interface Figures {
  query: { page1P99: number; deepP99: number }
  totalP50: Record<TotalForm, number>
}

interface BackendReport {
  backend: Backend
  title: string
  setup: string
  rows: Row[]
  totals: { form: TotalForm; label: string; result: SerialResult }[]
  figures: Figures
  targets: string[]
  failures: string[]
  notes: string[]
}

const tokenBody = (() => {
  const key = loadKey(Buffer.alloc(32, 7).toString('base64'))
  return () => ({
    body: Buffer.from(JSON.stringify({ ...seal(key, 1, eventId(), {}), enterpriseId: 1 })),
    headers: {},
  })
})()

async function measureBaseline(): Promise<ScenarioResult> {
  log('bare node:http baseline')
  const child = await startChild<BareServerReady>(new URL('./bare-server.js', import.meta.url).href, {})
  return withCleanup(
    () => child.stop(),
    () =>
      runScenario({
        url: child.ready.url,
        method: issueToken.method,
        path: issueToken.path,
        connections,
        seconds,
        warmupSeconds,
        pool: new RequestPool(tokenBody, true),
        serverUsage: () => child.usage(),
      }),
  )
}

type Stage = NonNullable<BenchServerSpec['stage']>

/** One report per stage: the whole plan, or above TARGET_TOTAL_ROWS its first TARGET_TOTAL_ROWS, then all of it. */
async function measureBackend(backend: Backend, bare: ScenarioResult): Promise<BackendReport[]> {
  let scratch: ScratchDatabase | undefined
  if (backend === 'postgres') scratch = await scratchPostgresDatabase()
  return withCleanup(
    async () => {
      await scratch?.drop()
    },
    async () => {
      const reports: BackendReport[] = []
      let stage: Stage = { from: 0, to: largeScale ? TARGET_TOTAL_ROWS : plan.recordings }
      for (;;) {
        log(
          `${backend}: starting the platform and seeding recordings ${format(stage.from)} to ${format(stage.to)}`,
        )
        const spec: BenchServerSpec = { backend, plan, stage, ...(scratch && { databaseUrl: scratch.url }) }
        const child = await startChild<BenchServerReady>(new URL('./bench-server.js', import.meta.url).href, {
          BENCH_SERVER_SPEC: JSON.stringify(spec),
        })
        const report = await withCleanup(
          () => child.stop(),
          () => measurePlatform(backend, child, bare, stage, reports[0]?.figures),
        )
        reports.push(report)
        if (stage.to === plan.recordings) return reports
        stage = { from: stage.to, to: plan.recordings, enterprises: child.ready.enterprises }
      }
    },
  )
}

/** The query targets, checked once over HTTP against the counts the server took in SQL; the deep page's items. */
async function checkQueryTargets(first: Partner, failures: string[]): Promise<number> {
  const [quietDevice, busyDevice] = [first.quiet[0], first.busy[0]] as [DeviceMatches, DeviceMatches]
  const page1 = await first.client.queryAudios({
    deviceUid: quietDevice.deviceUid,
    ...QUERY_RANGE,
    page: 1,
    size: PAGE_SIZE,
  })
  const deep = await first.client.queryAudios({
    deviceUid: busyDevice.deviceUid,
    ...QUERY_RANGE,
    page: DEEP_PAGE,
    size: PAGE_SIZE,
  })
  if (page1.total !== quietDevice.matches || deep.total !== busyDevice.matches) {
    failures.push(
      `query totals over HTTP (${page1.total}, ${deep.total}) differ from SQL counts (${quietDevice.matches}, ${busyDevice.matches})`,
    )
  }
  return deep.items.length
}

interface Scenario {
  scenario: string
  operation: PartnerOperationSpec
  make: () => PreparedRequest
}

/** Token, the filtered queries (page 1 and the deep page) and callback, each with its requests. */
function throughputScenarios(partners: Partner[], deepItems: number): Scenario[] {
  const first = partners[0] as Partner
  const range = (devices: DeviceMatches[]) => {
    const values = devices.map((device) => device.matches)
    const low = Math.min(...values)
    const high = Math.max(...values)
    return low === high ? format(low) : `${format(low)}–${format(high)}`
  }
  const holders = partners.filter((p) => p.recordings > 0)
  const callbackIds = holders.reduce((sum, p) => sum + p.callbackAudioIds.length, 0)
  /** Round robin over the first enterprise's devices of a kind. */
  const deviceQuery = (devices: DeviceMatches[], page: number) =>
    partnerRequests([first], (_, n) => ({
      plaintext: {
        deviceUid: (devices[n % devices.length] as DeviceMatches).deviceUid,
        ...QUERY_RANGE,
        page,
        size: PAGE_SIZE,
      },
      bearer: true,
    }))
  return [
    {
      scenario: `token (round robin over ${partners.length} enterprises)`,
      operation: issueToken,
      make: partnerRequests(partners, (partner) => ({
        plaintext: {},
        beside: { enterpriseId: partner.enterpriseId },
        bearer: false,
      })),
    },
    {
      scenario: `query: deviceUid + time range, page 1, size ${PAGE_SIZE} (${first.quiet.length} ordinary devices in turn, ${range(first.quiet)} matches)`,
      operation: queryRecordings,
      make: deviceQuery(first.quiet, 1),
    },
    {
      scenario: `query: deviceUid + time range, page ${DEEP_PAGE}, size ${PAGE_SIZE} (${first.busy.length} busy devices in turn, ${range(first.busy)} matches${deepItems < PAGE_SIZE ? `; ${deepItems} items on the page at this scale` : ''})`,
      operation: queryRecordings,
      make: deviceQuery(first.busy, DEEP_PAGE),
    },
    {
      scenario: `callback (${format(callbackIds)} audioIds in turn: repeats after the first round)`,
      operation: confirmReceipt,
      make: partnerRequests(holders, (partner, n) => ({
        plaintext: { audioId: partner.callbackAudioIds[n % partner.callbackAudioIds.length] as string },
        bearer: true,
      })),
    },
  ]
}

/** Each scenario for the run's duration, after its warm-up; the bare baseline first. */
async function runThroughput(
  backend: Backend,
  child: RunningChild<BenchServerReady>,
  bare: ScenarioResult,
  scenarios: Scenario[],
): Promise<Row[]> {
  const url = child.ready.partnerUrl
  const rows: Row[] = [{ scenario: 'bare node:http, fixed JSON body (baseline)', connections, result: bare }]
  for (const { scenario, operation, make } of scenarios) {
    log(`${backend}: ${scenario}`)
    const { method, path } = operation
    const result = await runScenario({
      url: `${url}${path}`,
      method,
      path,
      connections,
      seconds,
      warmupSeconds,
      pool: new RequestPool(make),
      ceilingRate: bare.requestsPerSecond * 1.1,
      serverUsage: () => child.usage(),
    })
    rows.push({
      scenario,
      connections,
      result,
      ...((operation === issueToken || operation === confirmReceipt) && {
        vsBare: result.requestsPerSecond / bare.requestsPerSecond,
      }),
    })
  }
  return rows
}

/** The exact total of the first enterprise, one request at a time, each checked against count(*). */
async function measureTotals(
  backend: Backend,
  ready: BenchServerReady,
  first: Partner,
  failures: string[],
): Promise<BackendReport['totals']> {
  const url = ready.partnerUrl
  const forms: { form: TotalForm; label: string; filter: JsonObject; expected: number }[] = [
    { form: 'none', label: 'no filter', filter: {}, expected: first.recordings },
    {
      form: 'window',
      label: `time window only, ${TOTAL_WINDOW.startTime} ≤ recordedAt < ${TOTAL_WINDOW.endTime}`,
      filter: { ...TOTAL_WINDOW },
      expected: ready.totals.window,
    },
    {
      form: 'device',
      label: 'deviceUid only (a busy device)',
      filter: { deviceUid: ready.totals.deviceUid },
      expected: ready.totals.device,
    },
  ]
  const totals: BackendReport['totals'] = []
  for (const { form, label, filter, expected } of forms) {
    log(`${backend}: exact total, ${label}`)
    const latencies: number[] = []
    let errors = 0
    for (let i = 0; i < TOTAL_WARMUP + TOTAL_REPEATS; i++) {
      try {
        const { milliseconds, plaintext } = await timedQuery(url, first, filter)
        if (plaintext.total !== expected) throw new Error(`total ${plaintext.total}, expected ${expected}`)
        if (i >= TOTAL_WARMUP) latencies.push(milliseconds)
      } catch (error) {
        if (errors++ === 0) failures.push(`exact total, ${label}: ${(error as Error).message}`)
      }
    }
    latencies.sort((a, b) => a - b)
    const at = (q: number) => latencies[Math.ceil(latencies.length * q) - 1] ?? Number.NaN
    totals.push({
      form,
      label: `${label}: ${format(expected)} of ${format(first.recordings)} rows`,
      result: { p50: at(0.5), p99: at(0.99), errors },
    })
  }
  return totals
}

/** The runs' errors (each a failure) and the notes on how they ran. */
function runProblems(rows: Row[], failures: string[]): string[] {
  const notes: string[] = []
  for (const row of rows) {
    const { result } = row
    if (result.madeLive > 0) {
      notes.push(
        `${row.scenario}: the pool of sealed bodies ran dry; ${result.madeLive} bodies were sealed by the generator during the run`,
      )
    }
    if (result.errors + result.warmupErrors === 0) continue
    const codes = Object.entries(result.failureCodes)
      .map(([code, n]) => `${code} × ${n}`)
      .join(', ')
    failures.push(
      `${row.scenario}: ${result.errors} errors in the measured run, ${result.warmupErrors} in the warm-up (${codes}; non-2xx ${result.non2xx}, 2xx without code 2000 ${result.wrongCode}, connection errors ${result.connectionErrors}, timeouts ${result.timeouts})` +
        (result.failureSamples.length > 0 ? `; e.g. \`${result.failureSamples[0]}\`` : ''),
    )
  }
  return notes
}

/** The issue's targets at this stage, each with its figures. */
function targetsOf(
  backend: Backend,
  rows: Row[],
  totals: BackendReport['totals'],
  figures: Figures,
  first: Partner,
  bare: ScenarioResult,
): string[] {
  const worstQueryP99 = Math.max(
    ...rows.filter((row) => row.scenario.startsWith('query')).map((row) => row.result.p99),
  )
  const token = rows.find((row) => row.scenario.startsWith('token'))
  const callback = rows.find((row) => row.scenario.startsWith('callback'))
  const totalMs = TARGET_TOTAL_MS[backend]
  const totalFigures = totals.map(({ form, result }) => `${form} ${ms(result.p50)} ms`).join(', ')
  const share = (name: string, row: Row | undefined, target: number) =>
    `${name} ≥ ${target * 100}% of bare node:http: ${yes((row?.vsBare ?? 0) >= target)} (${format(100 * (row?.vsBare ?? 0))}%: ${format(row?.result.requestsPerSecond ?? 0)} vs ${format(bare.requestsPerSecond)} requests/s)`
  const queryP99 = TARGET_QUERY_P99_MS[backend]
  return [
    share('token', token, TARGET_TOKEN_RATIO[backend]),
    share('callback', callback, TARGET_CALLBACK_RATIO[backend]),
    connections === TARGET_QUERY_CONNECTIONS
      ? `filtered query p99 ≤ ${queryP99} ms at ${TARGET_QUERY_CONNECTIONS} connections: ${yes(worstQueryP99 <= queryP99)} (page 1: ${ms(figures.query.page1P99)} ms, page ${DEEP_PAGE}: ${ms(figures.query.deepP99)} ms)`
      : `filtered query p99 ≤ ${queryP99} ms at ${TARGET_QUERY_CONNECTIONS} connections: not assessed (run at ${connections} connections)`,
    first.recordings >= TARGET_TOTAL_ROWS
      ? `exact total over ${format(TARGET_TOTAL_ROWS)}+ rows in one enterprise, p50 ≤ ${totalMs} ms for each form: ${yes(totals.every(({ result }) => result.p50 <= totalMs))} (${format(first.recordings)} rows: ${totalFigures})`
      : `exact total over ${format(TARGET_TOTAL_ROWS)}+ rows in one enterprise, p50 ≤ ${totalMs} ms: not assessed (${format(first.recordings)} rows at this scale: ${totalFigures})`,
  ]
}

async function measurePlatform(
  backend: Backend,
  child: RunningChild<BenchServerReady>,
  bare: ScenarioResult,
  stage: Stage,
  /** The same run's figures at TARGET_TOTAL_ROWS, to judge these against. */
  base: Figures | undefined,
): Promise<BackendReport> {
  const { ready } = child
  const partners = await partnersOf(ready.partnerUrl, ready.enterprises)
  const first = partners[0] as Partner
  const failures: string[] = []
  const deepItems = await checkQueryTargets(first, failures)
  const rows = await runThroughput(backend, child, bare, throughputScenarios(partners, deepItems))
  const totals = await measureTotals(backend, ready, first, failures)
  const notes = runProblems(rows, failures)
  const queries = rows.filter((row) => row.scenario.startsWith('query'))
  const figures: Figures = {
    query: { page1P99: queries[0]?.result.p99 ?? Number.NaN, deepP99: queries[1]?.result.p99 ?? Number.NaN },
    totalP50: Object.fromEntries(totals.map(({ form, result }) => [form, result.p50])) as Record<
      TotalForm,
      number
    >,
  }
  const targets = targetsOf(backend, rows, totals, figures, first, bare)
  if (base) targets.push(scaleTarget(figures, base))

  const usage = await child.usage()
  return {
    backend,
    title:
      (backend === 'pglite'
        ? `### PGlite, in memory (\`memory://\`), inside the platform process`
        : '### PostgreSQL') + (largeScale ? `, ${format(stage.to)} recordings` : ''),
    setup: `${ready.databaseVersion.split(',')[0]}. ${stage.from === 0 ? 'Seeded' : `Grown from ${format(stage.from)} to`} ${format(stage.to)} recordings in ${format(ready.seedSeconds, 1)} s (${format((stage.to - stage.from) / ready.seedSeconds)} rows/s, insertRecordings in transactions of 10,000 rows), then VACUUM ANALYZE and CHECKPOINT in ${format(ready.vacuumSeconds, 1)} s; platform process RSS ${format(ready.rssBytes / 2 ** 20)} MiB after seeding, ${format(usage.rssBytes / 2 ** 20)} MiB at the end.`,
    rows,
    totals,
    figures,
    targets,
    failures,
    notes,
  }
}

/** Each query and total figure at this stage against the same figure at TARGET_TOTAL_ROWS. */
function scaleTarget(figures: Figures, base: Figures): string {
  const pairs: [string, number, number][] = [
    ['query page 1 p99', figures.query.page1P99, base.query.page1P99],
    [`query page ${DEEP_PAGE} p99`, figures.query.deepP99, base.query.deepP99],
    ...(['none', 'window', 'device'] as const).map((form): [string, number, number] => [
      `total ${form} p50`,
      figures.totalP50[form],
      base.totalP50[form],
    ]),
  ]
  const ratios = pairs.map(([label, now, then]) => ({ label, ratio: now / then, now, then }))
  const holds = ratios.every(({ ratio }) => ratio <= TARGET_SCALE_RATIO)
  const listed = ratios.map(
    ({ label, ratio, now, then }) => `${label} ${ms(now)} vs ${ms(then)} ms: ${ratio.toFixed(2)}x`,
  )
  return `query and total figures within ${TARGET_SCALE_RATIO}x of the ${format(TARGET_TOTAL_ROWS)}-row figures above: ${yes(holds)} (${listed.join('; ')})`
}

function renderBackend(report: BackendReport): string {
  const lines = [
    report.title,
    '',
    report.setup,
    '',
    '| scenario | connections | requests/s | p50 ms | p99 ms | errors | vs bare node:http | CPU % server / generator |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...report.rows.map(({ scenario, connections, result, vsBare }) => {
      const errors = result.errors + result.warmupErrors
      return `| ${scenario} | ${connections} | ${format(result.requestsPerSecond)} | ${ms(result.p50)} | ${ms(result.p99)} | ${errors} | ${vsBare === undefined ? (scenario.includes('baseline') ? '1.00' : '–') : vsBare.toFixed(2)} | ${format(result.serverCpuPercent)} / ${format(result.generatorCpuPercent)} |`
    }),
    ...report.totals.map(
      ({ label, result }) =>
        `| exact total, ${label}; ${TOTAL_REPEATS} requests one at a time | 1 | – | ${ms(result.p50)} | ${ms(result.p99)} | ${result.errors} | – | – |`,
    ),
    '',
    'Targets:',
    '',
    ...report.targets.map((target) => `- ${target}`),
  ]
  if (report.notes.length > 0) lines.push('', ...report.notes.map((note) => `Note: ${note}.`))
  if (report.failures.length > 0) {
    lines.push('', '**Errors** (every response other than HTTP 2xx with code 2000 counts):', '')
    lines.push(...report.failures.map((failure) => `- ${failure}`))
  }
  return lines.join('\n')
}

const machine = machineLine()
const bare = await measureBaseline()
const { reports: stagesPerBackend, skipped } = await measureBackends(backends, (backend) =>
  measureBackend(backend, bare),
)
const reports = stagesPerBackend.flat()

const scale =
  plan.recordings < TARGET_TOTAL_ROWS
    ? ` **Reduced scale** (the issue's is ${format(TARGET_TOTAL_ROWS)} recordings): figures not comparable with the targets.`
    : ''
const section = sectionText(
  [
    `Measured ${machine}. ${largeScale ? `${format(TARGET_TOTAL_ROWS)} recordings, then the same database grown to ` : ''}${format(plan.recordings)} recordings, all in one of ${format(plan.enterprises)} enterprises, over its ${format(plan.devices)} devices (fixed seed; 1% of the devices are busy and hold 10% of the recordings; recordedAt over 2025; 70% audio + transcript, 20% audio only, 10% transcript only). The other enterprises hold keys only: they take their turn in the token scenario.${scale}`,
    `Each scenario: ${connections} connections for ${seconds} s after a ${warmupSeconds} s warm-up. The platform (rate limit off, logging silent) and the bare node:http baseline each run in a child process; the load generator (autocannon) runs in the bench process with request bodies sealed before the run, every one with a fresh nonce. Queries use ${QUERY_RANGE.startTime} ≤ recordedAt < ${QUERY_RANGE.endTime}; page 1 on ordinary devices, page ${DEEP_PAGE} on busy ones, ${PAGE_SIZE} a page. The exact totals are asked ${TOTAL_REPEATS} times each, one at a time after ${TOTAL_WARMUP} warm-up requests, and every answer is checked against count(*) taken after seeding. The baseline answers the same POST bodies as the token scenario with a fixed token-response-sized JSON body. Latencies are end to end as the generator sees them; CPU % is of one core (the server's figure includes PGlite, not the PostgreSQL server processes). Errors: every response other than HTTP 2xx with code 2000, connection errors and timeouts, warm-up included.`,
    ...reports.map(renderBackend),
  ],
  skipped,
)

if (largeScale) {
  publishSection('platform-large', section, {
    heading: '## Platform: partner API at a larger scale (`npm run bench:platform -- --rows N`)',
    after: '<!-- bench:platform:end -->',
  })
} else {
  publishSection('platform', section, {
    heading: '## Platform: partner API (`npm run bench:platform`)',
    after: '<!-- bench:protocol:end -->',
  })
}
const errors = reports.reduce((sum, report) => sum + report.failures.length, 0)
if (errors > 0) {
  log(`\n${errors} scenario(s) had errors: see above`)
  process.exitCode = 1
}
