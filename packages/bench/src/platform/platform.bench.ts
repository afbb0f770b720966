/**
 * `npm run bench:platform`: the partner API under load, beside a bare node:http server, on both backends.
 *
 * With BENCH_RECORDINGS recordings (default 1,000,000) across BENCH_ENTERPRISES enterprises (10) and
 * BENCH_DEVICES devices (5,000), measures requests/s and p50/p99 of token, a filtered query (deviceUid +
 * time range, page 1 and page 50) and callback at BENCH_CONNECTIONS connections (32) for
 * BENCH_DURATION seconds each (10), and the latency of an enterprise-wide `total`. BENCH_BACKENDS
 * (default `pglite,postgres`) picks the backends; PostgreSQL needs DATABASE_URL (a scratch database is
 * created on that server and dropped at the end).
 *
 * Each server (the platform, the baseline) runs in its own child process; the load generator
 * (autocannon) runs here, fed with request bodies sealed before each measured run.
 */
import { type EnvelopeKey, type JsonObject, loadKey, open, seal } from '@earshot/protocol'
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
import type { BenchEnterprise, BenchServerReady, BenchServerSpec } from './bench-server.js'
import { type PreparedRequest, RequestPool, runScenario, type ScenarioResult } from './load.js'
import { checkPlan, type DatasetPlan, DEFAULT_SEED, QUERY_RANGE } from './seed-data.js'

const TARGET_TOKEN_RATIO = 0.5
const TARGET_QUERY_P99_MS = 25
const TARGET_QUERY_CONNECTIONS = 32
const TARGET_TOTAL_MS = 50
const TARGET_TOTAL_ROWS = 100_000
const TOTAL_REPEATS = 20
const DEEP_PAGE = 50
const PAGE_SIZE = 20

const plan: DatasetPlan = {
  recordings: integerSetting('BENCH_RECORDINGS', 1_000_000),
  enterprises: integerSetting('BENCH_ENTERPRISES', 10),
  devices: integerSetting('BENCH_DEVICES', 5000),
  seed: DEFAULT_SEED,
}
checkPlan(plan)
const seconds = integerSetting('BENCH_DURATION', 10)
const connections = integerSetting('BENCH_CONNECTIONS', 32)
const warmupSeconds = Math.min(3, Math.max(1, Math.round(seconds / 5)))
const backends = backendsSetting()
cleanUpOnInterrupt()

let eventCounter = 0
const eventId = () => `bench-${++eventCounter}`

interface Partner extends BenchEnterprise {
  key: EnvelopeKey
  token: string
}

async function postJson(url: string, body: unknown, token?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  })
  return { status: response.status, body: (await response.json()) as { code: number; data?: unknown } }
}

async function tokenFor(partnerUrl: string, enterprise: BenchEnterprise, key: EnvelopeKey): Promise<string> {
  const reply = await postJson(`${partnerUrl}/openapi/v1/token`, {
    ...seal(key, enterprise.keyVersion, eventId(), {}),
    enterpriseId: enterprise.enterpriseId,
  })
  if (reply.body.code !== 2000) throw new Error(`token refused: ${JSON.stringify(reply.body)}`)
  return (reply.body.data as { accessToken: string }).accessToken
}

/** One sealed partner request, sent outside the load run; returns the opened response plaintext. */
async function callOnce(partnerUrl: string, partner: Partner, path: string, plaintext: JsonObject) {
  const started = performance.now()
  const reply = await postJson(
    `${partnerUrl}${path}`,
    seal(partner.key, partner.keyVersion, eventId(), plaintext),
    partner.token,
  )
  const milliseconds = performance.now() - started
  if (reply.body.code !== 2000) throw new Error(`${path} refused: ${JSON.stringify(reply.body)}`)
  const opened = open(reply.body.data as Parameters<typeof open>[0], partner.key).plaintext
  return { milliseconds, plaintext: opened as { total: number; items: unknown[] } }
}

/** Round robin over the enterprises: each request sealed under its enterprise's key, with its token. */
function partnerRequests(
  partners: Partner[],
  build: (partner: Partner, n: number) => { plaintext: JsonObject; beside?: JsonObject; bearer: boolean },
): () => PreparedRequest {
  let n = 0
  return (): PreparedRequest => {
    const partner = partners[n % partners.length] as Partner
    const { plaintext, beside, bearer } = build(partner, Math.floor(n / partners.length))
    n++
    return {
      body: Buffer.from(
        JSON.stringify({ ...seal(partner.key, partner.keyVersion, eventId(), plaintext), ...beside }),
      ),
      headers: bearer ? { authorization: `Bearer ${partner.token}` } : ({} as Record<string, string>),
    }
  }
}

interface Row {
  scenario: string
  connections: number
  result: ScenarioResult
  vsBare?: number
}

interface BackendReport {
  backend: Backend
  title: string
  setup: string
  rows: Row[]
  total: { rows: number; p50: number; max: number; errors: number }
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
        path: '/openapi/v1/token',
        connections,
        seconds,
        warmupSeconds,
        pool: new RequestPool(tokenBody, true),
        serverUsage: () => child.usage(),
      }),
  )
}

async function measureBackend(backend: Backend, bare: ScenarioResult): Promise<BackendReport> {
  let scratch: ScratchDatabase | undefined
  if (backend === 'postgres') scratch = await scratchPostgresDatabase()
  return withCleanup(
    async () => {
      await scratch?.drop()
    },
    async () => {
      log(`${backend}: starting the platform and seeding ${format(plan.recordings)} recordings`)
      const spec: BenchServerSpec = {
        backend,
        plan,
        ...(scratch && { databaseUrl: scratch.url }),
      }
      const child = await startChild<BenchServerReady>(new URL('./bench-server.js', import.meta.url).href, {
        BENCH_SERVER_SPEC: JSON.stringify(spec),
      })
      return withCleanup(
        () => child.stop(),
        () => measurePlatform(backend, child, bare),
      )
    },
  )
}

async function measurePlatform(
  backend: Backend,
  child: RunningChild<BenchServerReady>,
  bare: ScenarioResult,
): Promise<BackendReport> {
  const { ready } = child
  const url = ready.partnerUrl
  const partners: Partner[] = []
  for (const enterprise of ready.enterprises) {
    const key = loadKey(enterprise.secret)
    partners.push({ ...enterprise, key, token: await tokenFor(url, enterprise, key) })
  }
  const first = partners[0] as Partner
  const failures: string[] = []

  // The query targets, checked once over HTTP against the counts the server took in SQL.
  const quiet = { deviceUid: first.quietDevice, ...QUERY_RANGE }
  const busy = { deviceUid: first.busyDevice, ...QUERY_RANGE }
  const page1 = await callOnce(url, first, '/openapi/v1/audios', { ...quiet, page: 1, size: PAGE_SIZE })
  const deep = await callOnce(url, first, '/openapi/v1/audios', { ...busy, page: DEEP_PAGE, size: PAGE_SIZE })
  if (page1.plaintext.total !== first.quietMatches || deep.plaintext.total !== first.busyMatches) {
    failures.push(
      `query totals over HTTP (${page1.plaintext.total}, ${deep.plaintext.total}) differ from SQL counts (${first.quietMatches}, ${first.busyMatches})`,
    )
  }
  const range = (pick: (p: Partner) => number) => {
    const values = partners.map(pick)
    const low = Math.min(...values)
    const high = Math.max(...values)
    return low === high ? format(low) : `${format(low)}–${format(high)}`
  }
  const deepItems = deep.plaintext.items.length
  const callbackIds = partners.reduce((sum, p) => sum + p.callbackAudioIds.length, 0)

  const scenarios: { scenario: string; path: string; make: () => PreparedRequest }[] = [
    {
      scenario: 'token',
      path: '/openapi/v1/token',
      make: partnerRequests(partners, (partner) => ({
        plaintext: {},
        beside: { enterpriseId: partner.enterpriseId },
        bearer: false,
      })),
    },
    {
      scenario: `query: deviceUid + time range, page 1, size ${PAGE_SIZE} (${range((p) => p.quietMatches)} matches)`,
      path: '/openapi/v1/audios',
      make: partnerRequests(partners, (partner) => ({
        plaintext: { deviceUid: partner.quietDevice, ...QUERY_RANGE, page: 1, size: PAGE_SIZE },
        bearer: true,
      })),
    },
    {
      scenario: `query: deviceUid + time range, page ${DEEP_PAGE}, size ${PAGE_SIZE} (${range((p) => p.busyMatches)} matches${deepItems < PAGE_SIZE ? `; ${deepItems} items on the page at this scale` : ''})`,
      path: '/openapi/v1/audios',
      make: partnerRequests(partners, (partner) => ({
        plaintext: { deviceUid: partner.busyDevice, ...QUERY_RANGE, page: DEEP_PAGE, size: PAGE_SIZE },
        bearer: true,
      })),
    },
    {
      scenario: `callback (${format(callbackIds)} audioIds in turn: repeats after the first round)`,
      path: '/openapi/v1/callback',
      make: partnerRequests(partners, (partner, n) => ({
        plaintext: { audioId: partner.callbackAudioIds[n % partner.callbackAudioIds.length] as string },
        bearer: true,
      })),
    },
  ]

  const rows: Row[] = [{ scenario: 'bare node:http, fixed JSON body (baseline)', connections, result: bare }]
  for (const { scenario, path, make } of scenarios) {
    log(`${backend}: ${scenario}`)
    const result = await runScenario({
      url: `${url}${path}`,
      path,
      connections,
      seconds,
      warmupSeconds,
      pool: new RequestPool(make),
      serverUsage: () => child.usage(),
    })
    rows.push({
      scenario,
      connections,
      result,
      ...(path === '/openapi/v1/token' && { vsBare: result.requestsPerSecond / bare.requestsPerSecond }),
    })
  }

  // The enterprise-wide total: one request at a time, `{}` filter, on the largest enterprise.
  log(`${backend}: enterprise-wide total`)
  const largest = partners.reduce((a, b) => (b.recordings > a.recordings ? b : a))
  const totals: number[] = []
  let totalErrors = 0
  for (let i = 0; i <= TOTAL_REPEATS; i++) {
    try {
      const { milliseconds, plaintext } = await callOnce(url, largest, '/openapi/v1/audios', {})
      if (plaintext.total !== largest.recordings) {
        throw new Error(`total ${plaintext.total}, expected ${largest.recordings}`)
      }
      if (i > 0) totals.push(milliseconds) // the first one warms up
    } catch (error) {
      totalErrors++
      failures.push(`enterprise-wide total: ${(error as Error).message}`)
    }
  }
  totals.sort((a, b) => a - b)
  const total = {
    rows: largest.recordings,
    p50: totals[Math.ceil(totals.length / 2) - 1] ?? Number.NaN,
    max: totals[totals.length - 1] ?? Number.NaN,
    errors: totalErrors,
  }

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

  const token = rows.find((row) => row.vsBare !== undefined)
  const queries = rows.filter((row) => row.scenario.startsWith('query'))
  const worstQueryP99 = Math.max(...queries.map((row) => row.result.p99))
  const targets = [
    `token ≥ ${TARGET_TOKEN_RATIO * 100}% of bare node:http: ${yes((token?.vsBare ?? 0) >= TARGET_TOKEN_RATIO)} (${format(100 * (token?.vsBare ?? 0))}%: ${format(token?.result.requestsPerSecond ?? 0)} vs ${format(bare.requestsPerSecond)} requests/s)`,
    backend === 'postgres'
      ? connections === TARGET_QUERY_CONNECTIONS
        ? `filtered query p99 ≤ ${TARGET_QUERY_P99_MS} ms at ${TARGET_QUERY_CONNECTIONS} connections on PostgreSQL: ${yes(worstQueryP99 <= TARGET_QUERY_P99_MS)} (page 1: ${ms(queries[0]?.result.p99 ?? Number.NaN)} ms, page ${DEEP_PAGE}: ${ms(queries[1]?.result.p99 ?? Number.NaN)} ms)`
        : `filtered query p99 ≤ ${TARGET_QUERY_P99_MS} ms at ${TARGET_QUERY_CONNECTIONS} connections on PostgreSQL: not assessed (run at ${connections} connections)`
      : `filtered query p99 (the ≤ ${TARGET_QUERY_P99_MS} ms target is for PostgreSQL; shown for reference): page 1: ${ms(queries[0]?.result.p99 ?? Number.NaN)} ms, page ${DEEP_PAGE}: ${ms(queries[1]?.result.p99 ?? Number.NaN)} ms`,
    total.rows >= TARGET_TOTAL_ROWS
      ? `enterprise-wide total over ${format(TARGET_TOTAL_ROWS)}+ rows ≤ ${TARGET_TOTAL_MS} ms (judged on the median of ${TOTAL_REPEATS} requests): ${yes(total.p50 <= TARGET_TOTAL_MS)} (${format(total.rows)} rows: p50 ${ms(total.p50)} ms, max ${ms(total.max)} ms)`
      : `enterprise-wide total over ${format(TARGET_TOTAL_ROWS)}+ rows ≤ ${TARGET_TOTAL_MS} ms: not assessed (only ${format(total.rows)} rows per enterprise at this scale; p50 ${ms(total.p50)} ms, max ${ms(total.max)} ms)`,
  ]

  const usage = await child.usage()
  return {
    backend,
    title:
      backend === 'pglite'
        ? `### PGlite, in memory (\`memory://\`), inside the platform process`
        : '### PostgreSQL',
    setup: `${ready.databaseVersion.split(',')[0]}. Seeded ${format(plan.recordings)} recordings in ${format(ready.seedSeconds, 1)} s (${format(plan.recordings / ready.seedSeconds)} rows/s, insertRecordings in transactions of 10,000 rows), then VACUUM ANALYZE in ${format(ready.vacuumSeconds, 1)} s; platform process RSS ${format(ready.rssBytes / 2 ** 20)} MiB after seeding, ${format(usage.rssBytes / 2 ** 20)} MiB at the end.`,
    rows,
    total,
    targets,
    failures,
    notes,
  }
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
    `| enterprise-wide total: \`{}\` filter over ${format(report.total.rows)} rows, ${TOTAL_REPEATS} requests one at a time (p99 column: max) | 1 | – | ${ms(report.total.p50)} | ${ms(report.total.max)} | ${report.total.errors} | – | – |`,
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
const { reports, skipped } = await measureBackends(backends, (backend) => measureBackend(backend, bare))

const scale =
  plan.recordings < 1_000_000
    ? ` **Reduced scale** (the issue's is 1,000,000 recordings): figures not comparable with the targets.`
    : ''
const section = sectionText(
  [
    `Measured ${machine}. ${format(plan.recordings)} recordings across ${format(plan.enterprises)} enterprises and ${format(plan.devices)} devices (fixed seed; 1% of each enterprise's devices are busy and hold 10% of its recordings; recordedAt over 2025; 70% audio + transcript, 20% audio only, 10% transcript only).${scale}`,
    `Each scenario: ${connections} connections for ${seconds} s after a ${warmupSeconds} s warm-up. The platform (rate limit off, logging silent) and the bare node:http baseline each run in a child process; the load generator (autocannon) runs in the bench process with request bodies sealed before the run, every one with a fresh nonce, round robin over the enterprises. Queries use ${QUERY_RANGE.startTime} ≤ recordedAt < ${QUERY_RANGE.endTime}; page 1 on an ordinary device, page ${DEEP_PAGE} on a busy one. The baseline answers the same POST bodies as the token scenario with a fixed token-response-sized JSON body. Latencies are end to end as the generator sees them; CPU % is of one core (the server's figure includes PGlite, not the PostgreSQL server processes). Errors: every response other than HTTP 2xx with code 2000, connection errors and timeouts, warm-up included.`,
    ...reports.map(renderBackend),
  ],
  skipped,
)

publishSection('platform', section, {
  heading: '## Platform: partner API (`npm run bench:platform`)',
  after: '<!-- bench:protocol:end -->',
})
const errors = reports.reduce((sum, report) => sum + report.failures.length, 0)
if (errors > 0) {
  log(`\n${errors} scenario(s) had errors: see above`)
  process.exitCode = 1
}
