/**
 * `npm run bench:deep-page`: does a tenant paging deep into its recordings stall everyone else?
 *
 * The platform (child process, seeded by bench-server.ts, VACUUM ANALYZEd and checkpointed) holds BENCH_RECORDINGS
 * recordings (default 200,000) across BENCH_ENTERPRISES enterprises (2), so the first holds 100,000. For
 * BENCH_DURATION seconds (10) after a 2 s warm-up, BENCH_DEEP_CONNECTIONS connections (2) each ask the
 * first enterprise for its last full page (`{"page": recordings / 10, "size": 10}`) in a loop, one
 * request after the other; meanwhile one probe at a time asks `GET /healthz` of the partner listener
 * (a 10 ms pause between probes) and another enterprise asks for page 1 of one of its ordinary devices
 * (a 50 ms pause between queries). The same probes run first without the deep-page loop, as the
 * reference. Target: /healthz p99 ≤ 20 ms during the loop. BENCH_BACKENDS as in the other benchmarks.
 */
import { type JsonObject, PartnerOperation } from '@earshot/protocol'
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
import { openedData, type Partner, partnersOf, sealedPost } from './bench-partners.js'
import type { BenchServerReady, BenchServerSpec } from './bench-server.js'
import { checkPlan, type DatasetPlan, DEFAULT_SEED } from './seed-data.js'

const TARGET_HEALTHZ_P99_MS = 20
const DEEP_SIZE = 10
const HEALTHZ_PAUSE_MS = 10
const OTHER_PAUSE_MS = 50
const WARMUP_SECONDS = 2

const plan: DatasetPlan = {
  recordings: integerSetting('BENCH_RECORDINGS', 200_000),
  enterprises: integerSetting('BENCH_ENTERPRISES', 2, 2),
  devices: integerSetting('BENCH_DEVICES', 1000),
  seed: DEFAULT_SEED,
  layout: 'spread',
}
checkPlan(plan)
const seconds = integerSetting('BENCH_DURATION', 10)
const deepConnections = integerSetting('BENCH_DEEP_CONNECTIONS', 2)
const backends = backendsSetting()
cleanUpOnInterrupt()

const { queryRecordings } = PartnerOperation

/**
 * One query sealed and sent as it is (timed in a loop: the partner client's own checks and parsing are
 * left out); throws unless it answers 2000 with the expected total and page length.
 */
async function query(
  url: string,
  partner: Partner,
  filter: JsonObject,
  expect: { total: number; items: number },
) {
  const reply = await sealedPost(url, queryRecordings, partner, filter)
  const list = openedData<{ total: number; items: unknown[] }>(partner, queryRecordings, reply)
  if (list.total !== expect.total || list.items.length !== expect.items) {
    throw new Error(
      `query answered total ${list.total} with ${list.items.length} items, expected ${JSON.stringify(expect)}`,
    )
  }
}

async function healthz(url: string) {
  const response = await fetch(`${url}/healthz`)
  const body = await response.text()
  if (response.status !== 200) throw new Error(`/healthz answered ${response.status}: ${body}`)
}

interface Series {
  latencies: number[]
  errors: number
  firstError?: string
}

const pause = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds))

/** Runs `call` one at a time until `until()` (with `pauseMs` between calls), recording latencies once `measuring()`. */
async function loop(
  call: () => Promise<void>,
  series: Series,
  until: () => boolean,
  measuring: () => boolean,
  pauseMs = 0,
): Promise<void> {
  while (!until()) {
    const started = performance.now()
    try {
      await call()
      if (measuring()) series.latencies.push(performance.now() - started)
    } catch (error) {
      series.errors++
      series.firstError ??= (error as Error).message
    }
    if (pauseMs > 0) await pause(pauseMs)
  }
}

interface Stats {
  count: number
  perSecond: number
  p50: number
  p99: number
  max: number
  errors: number
  firstError?: string
}

function stats(series: Series): Stats {
  const sorted = [...series.latencies].sort((a, b) => a - b)
  const at = (p: number) =>
    sorted.length === 0
      ? Number.NaN
      : (sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number)
  return {
    count: sorted.length,
    perSecond: sorted.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    errors: series.errors,
    ...(series.firstError !== undefined && { firstError: series.firstError }),
  }
}

interface Phase {
  name: string
  deep?: Stats
  healthz: Stats
  other: Stats
}

/** One phase: the probes (and the deep-page loop when `deep`), WARMUP_SECONDS unmeasured, then `seconds`. */
async function phase(
  name: string,
  url: string,
  deep: (() => Promise<void>) | undefined,
  other: () => Promise<void>,
): Promise<Phase> {
  log(`  ${name}`)
  const started = performance.now()
  const measureFrom = started + WARMUP_SECONDS * 1000
  const stopAt = measureFrom + seconds * 1000
  const until = () => performance.now() >= stopAt
  const measuring = () => performance.now() >= measureFrom
  const deepSeries: Series = { latencies: [], errors: 0 }
  const healthzSeries: Series = { latencies: [], errors: 0 }
  const otherSeries: Series = { latencies: [], errors: 0 }
  await Promise.all([
    ...(deep ? Array.from({ length: deepConnections }, () => loop(deep, deepSeries, until, measuring)) : []),
    loop(() => healthz(url), healthzSeries, until, measuring, HEALTHZ_PAUSE_MS),
    loop(other, otherSeries, until, measuring, OTHER_PAUSE_MS),
  ])
  return {
    name,
    ...(deep && { deep: stats(deepSeries) }),
    healthz: stats(healthzSeries),
    other: stats(otherSeries),
  }
}

interface BackendReport {
  backend: Backend
  setup: string
  deepFilter: string
  phases: Phase[]
}

async function measureBackend(backend: Backend): Promise<BackendReport> {
  let scratch: ScratchDatabase | undefined
  if (backend === 'postgres') scratch = await scratchPostgresDatabase()
  return withCleanup(
    async () => {
      await scratch?.drop()
    },
    async () => {
      log(`${backend}: starting the platform and seeding ${format(plan.recordings)} recordings`)
      const spec: BenchServerSpec = { backend, plan, ...(scratch && { databaseUrl: scratch.url }) }
      const child = await startChild<BenchServerReady>(new URL('./bench-server.js', import.meta.url).href, {
        BENCH_SERVER_SPEC: JSON.stringify(spec),
      })
      return withCleanup(
        () => child.stop(),
        () => measurePlatform(backend, child),
      )
    },
  )
}

async function measurePlatform(
  backend: Backend,
  child: RunningChild<BenchServerReady>,
): Promise<BackendReport> {
  const url = child.ready.partnerUrl
  const [deepPartner, otherPartner] = (await partnersOf(url, child.ready.enterprises.slice(0, 2))) as [
    Partner,
    Partner,
  ]
  const lastPage = Math.floor(deepPartner.recordings / DEEP_SIZE)
  const deepFilter = { page: lastPage, size: DEEP_SIZE }
  const deep = () => query(url, deepPartner, deepFilter, { total: deepPartner.recordings, items: DEEP_SIZE })
  const otherFilter = { deviceUid: otherPartner.quiet[0]?.deviceUid ?? '', page: 1, size: 20 }
  // The device's total over all time (bench-server counts its QUERY_RANGE only): asked once.
  const otherTotal = (await otherPartner.client.queryAudios(otherFilter)).total
  const other = () =>
    query(url, otherPartner, otherFilter, { total: otherTotal, items: Math.min(20, otherTotal) })
  const phases = [
    await phase('reference: the probes alone', url, undefined, other),
    await phase(`deep-page loop on ${deepConnections} connections`, url, deep, other),
  ]
  return {
    backend,
    setup: `${child.ready.databaseVersion.split(',')[0]}. Seeded ${format(plan.recordings)} recordings in ${format(child.ready.seedSeconds, 1)} s, then VACUUM ANALYZE and CHECKPOINT in ${format(child.ready.vacuumSeconds, 1)} s.`,
    deepFilter: JSON.stringify(deepFilter),
    phases,
  }
}

function render(report: BackendReport): string {
  const during = report.phases.find((p) => p.deep)
  const row = (phaseName: string, what: string, s: Stats) =>
    `| ${phaseName} | ${what} | ${format(s.count)} | ${format(s.perSecond, 1)} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.max)} | ${s.errors} |`
  const lines = [
    report.backend === 'pglite' ? '### PGlite, in memory (`memory://`)' : '### PostgreSQL',
    '',
    report.setup,
    '',
    '| phase | requests | answered | per second | p50 ms | p99 ms | max ms | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ]
  for (const p of report.phases) {
    if (p.deep) lines.push(row(p.name, `deep page \`${report.deepFilter}\` (all connections)`, p.deep))
    lines.push(row(p.name, '`GET /healthz`', p.healthz))
    lines.push(row(p.name, "another enterprise's page 1 (one device)", p.other))
  }
  const p99 = during?.healthz.p99 ?? Number.NaN
  lines.push(
    '',
    `Target: /healthz p99 ≤ ${TARGET_HEALTHZ_P99_MS} ms during the deep-page loop: ${yes(p99 <= TARGET_HEALTHZ_P99_MS)} (${ms(p99)} ms).`,
  )
  const errors = report.phases.flatMap((p) =>
    [p.deep, p.healthz, p.other].filter((s) => s?.firstError).map((s) => `${p.name}: ${s?.firstError}`),
  )
  if (errors.length > 0) lines.push('', '**Errors**:', '', ...errors.map((e) => `- ${e}`))
  return lines.join('\n')
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const section = sectionText(
  [
    `Measured ${machine}. ${format(plan.recordings)} recordings across ${format(plan.enterprises)} enterprises (the data set of \`bench:platform\`, spread over them), so the first holds ${format(Math.ceil(plan.recordings / plan.enterprises))}. For ${seconds} s after a ${WARMUP_SECONDS} s warm-up: ${deepConnections} connections each ask the first enterprise for its last full page in a loop, one request after the other; one \`GET /healthz\` probe at a time on the partner listener (${HEALTHZ_PAUSE_MS} ms between probes); another enterprise's page 1 of an ordinary device, one at a time (${OTHER_PAUSE_MS} ms between queries). The reference phase runs the same probes without the loop. The platform runs in a child process; latencies are end to end as this process sees them.`,
    ...reports.map(render),
  ],
  skipped,
)
publishSection('deep-page', section, {
  heading: '## Platform: a deep page beside other tenants (`npm run bench:deep-page`)',
  after: '<!-- bench:platform:end -->',
})
const failed = reports.some((r) =>
  r.phases.some((p) => [p.deep, p.healthz, p.other].some((s) => (s?.errors ?? 0) > 0)),
)
if (failed) process.exitCode = 1
