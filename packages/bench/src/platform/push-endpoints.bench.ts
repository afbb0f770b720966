/**
 * `npm run bench:push` (after push.bench.js): what push endpoints cost, on one platform per backend
 * (BENCH_BACKENDS, default `postgres`: a scratch database on the DATABASE_URL server, dropped at the end;
 * `pglite` works too), with the receiver of push.bench.ts (acks, then calls back at once).
 *
 * 1. Per-recording order: the backlog drain of BENCH_ENDPOINTS_DELIVERIES deliveries (default 10,000) to
 *    one endpoint, with order engaged (half as many recordings, each with its audio and its transcript:
 *    the `recording.transcript_ready` delivery waits, queued, until the `recording.audio_ready` one is
 *    acknowledged) and without (as many audio-only recordings as deliveries), interleaved over
 *    BENCH_ENDPOINTS_ROUNDS rounds (default 3), an enterprise of its own per run; each timed from the
 *    import's commit to its last confirmation. delivery_attempts tells whether any transcript went first.
 * 2. Per-endpoint rate: one enterprise with endpoint B (audio_ready, no limit, BENCH_ENDPOINTS_RATE_B
 *    audio-only recordings, default 6,000) alone, then beside endpoint A (transcript_ready, maxPerSecond
 *    BENCH_ENDPOINTS_LIMIT, default 50, given enough transcript-only recordings to outlast the window),
 *    in the same import; interleaved over BENCH_ENDPOINTS_RATE_ROUNDS rounds (default 2). A's rate is
 *    taken from its attempts' starts between 2 s and 12 s after the commit; B's drain as in 1.
 *
 * With BENCH_ENDPOINTS_PROFILE_DIR set, the platform runs with --cpu-prof into that directory and the
 * profile's top self-time functions are logged. The results go to docs/benchmarks.md between the
 * push-endpoints markers.
 */
import { loadavg } from 'node:os'
import { PushEventType, type PushEventTypeValue } from '@earshot/protocol'
import {
  type Backend,
  backendsSetting,
  cleanUpOnInterrupt,
  format,
  integerSetting,
  log,
  machineLine,
  measureBackends,
  publishSection,
  sectionText,
} from '../bench-support.js'
import type { RunningChild } from '../child.js'
import { logProfile } from './media-profile.js'
import {
  AUDIO_AND_TRANSCRIPT,
  AUDIO_ONLY,
  addEndpoint,
  awaitConfirmations,
  benchEnterprise,
  type DoneCount,
  importRecordings,
  jsonLines,
  recordingLine,
  registerWithReceiver,
  TRANSCRIPT_ONLY,
} from './push-bench-api.js'
import type { PushReceiverReady } from './push-bench-receiver.js'
import {
  cpuPercent,
  pushStats,
  type Storage,
  settle,
  startPushPlatform,
  startPushReceiver,
  usageOf,
  withPushStorage,
  withRunning,
} from './push-bench-run.js'
import {
  type BackendReport,
  type OrderRun,
  type RateRun,
  renderBackend,
  type TimedRun,
  type Wait,
  WINDOW,
} from './push-endpoints-report.js'
import type { PushPlatformReady } from './push-platform.js'
import type { DeliveryStats, PushStatsSpec } from './push-stats.js'

/** A is given this long's worth of deliveries past the window's end, at its rate. */
const A_MARGIN_MS = 6000

const settings = {
  deliveries: 2 * Math.ceil(integerSetting('BENCH_ENDPOINTS_DELIVERIES', 10_000, 2) / 2),
  rounds: integerSetting('BENCH_ENDPOINTS_ROUNDS', 3, 0),
  limit: integerSetting('BENCH_ENDPOINTS_LIMIT', 50),
  rateB: integerSetting('BENCH_ENDPOINTS_RATE_B', 6000),
  rateRounds: integerSetting('BENCH_ENDPOINTS_RATE_ROUNDS', 2, 0),
  settleMs: integerSetting('BENCH_ENDPOINTS_SETTLE_MS', 5000, 0),
  callbackConnections: integerSetting('BENCH_PUSH_CALLBACK_CONNECTIONS', 16),
}
const rateA = integerSetting(
  'BENCH_ENDPOINTS_RATE_A',
  Math.ceil((settings.limit * (WINDOW.to + A_MARGIN_MS)) / 1000),
)
const profileDir = process.env.BENCH_ENDPOINTS_PROFILE_DIR || undefined
const backends = backendsSetting('postgres')
cleanUpOnInterrupt()

interface Bench {
  storage: Storage
  platform: RunningChild<PushPlatformReady>
  receiver: RunningChild<PushReceiverReady>
}

/** Every push acknowledged has its own callback: a recording with a transcript has two. */
const callbacks: DoneCount = (progress) => progress.callbacks

/**
 * Imports `body` (one transaction), then waits for each label's pushes to be confirmed, one label after
 * the other; CPU use is measured from the import's end to each label's.
 */
async function timedRun(
  bench: Bench,
  label: string,
  enterpriseId: number,
  body: string,
  awaited: { label: string; expected: number }[],
): Promise<Omit<TimedRun, 'stats'>> {
  const children = [bench.platform, bench.receiver]
  const imported = await importRecordings(bench.platform.ready, enterpriseId, body)
  let from = await usageOf(children)
  const waits: Wait[] = []
  for (const { label: waited, expected } of awaited) {
    const url = bench.receiver.ready.url
    const done = await awaitConfirmations(
      url,
      waited,
      () => expected,
      () => true,
      callbacks,
    )
    const reading = await usageOf(children)
    waits.push({ label: waited, expected, ...done, cpu: cpuPercent(from, reading) })
    from = reading
  }
  return { label, enterpriseId, imported, waits }
}

/** The drain with order engaged (recordings with audio and transcript) or not (twice as many audio-only). */
async function orderRun(bench: Bench, ordered: boolean, round: number): Promise<Omit<OrderRun, 'stats'>> {
  const label = `${ordered ? 'ordered' : 'unordered'}-${round}`
  await settle(bench.storage, settings.settleMs)
  const { deliveries } = settings
  const credentials = await benchEnterprise(bench.platform.ready, bench.receiver.ready.url, label)
  const body = ordered
    ? jsonLines(label, 0, deliveries / 2, AUDIO_AND_TRANSCRIPT)
    : jsonLines(label, 0, deliveries, AUDIO_ONLY)
  log(
    `  ${label}: ${format(ordered ? deliveries / 2 : deliveries)} recordings, ${format(deliveries)} deliveries`,
  )
  const run = await timedRun(bench, label, credentials.enterpriseId, body, [{ label, expected: deliveries }])
  return { ...run, ordered }
}

/** B's audio-only recordings, with A's transcript-only ones spread evenly among them when `withA`. */
function rateBody(label: string, withA: boolean): string {
  const lines: string[] = []
  const aCount = withA ? rateA : 0
  let a = 0
  for (let b = 0; b < settings.rateB; b++) {
    lines.push(recordingLine(label, b, AUDIO_ONLY))
    while (a < aCount && (a + 1) * settings.rateB <= (b + 1) * aCount) {
      lines.push(recordingLine(label, settings.rateB + a++, TRANSCRIPT_ONLY))
    }
  }
  return `${lines.join('\n')}\n`
}

/** B alone, or beside A (held to settings.limit a second), on one enterprise without a push URL. */
async function rateRun(bench: Bench, beside: boolean, round: number): Promise<Omit<RateRun, 'stats'>> {
  const label = `${beside ? 'beside' : 'alone'}-${round}`
  await settle(bench.storage, settings.settleMs)
  const { platform, receiver } = bench
  const credentials = await benchEnterprise(platform.ready, receiver.ready.url, label, null)
  const endpoint = async (name: string, eventType: PushEventTypeValue, maxPerSecond?: number) => {
    const endpointLabel = `${label}-${name}`
    await registerWithReceiver(receiver.ready.url, endpointLabel, credentials)
    const url = `${receiver.ready.url}/push/${endpointLabel}`
    const added = { url, eventTypes: [eventType], ...(maxPerSecond && { maxPerSecond }) }
    return {
      label: endpointLabel,
      endpointId: await addEndpoint(platform.ready, credentials.enterpriseId, added),
    }
  }
  const endpoints = [await endpoint('b', PushEventType.AUDIO_READY)]
  if (beside) endpoints.push(await endpoint('a', PushEventType.TRANSCRIPT_READY, settings.limit))
  log(`  ${label}: ${format(settings.rateB)} recordings for B${beside ? `, ${format(rateA)} for A` : ''}`)
  const awaited = endpoints.map((each, i) => ({
    label: each.label,
    expected: i === 0 ? settings.rateB : rateA,
  }))
  const body = rateBody(label, beside)
  const run = await timedRun(bench, label, credentials.enterpriseId, body, awaited)
  return { ...run, beside, endpoints }
}

async function allRuns(bench: Bench) {
  const orderRuns: Omit<OrderRun, 'stats'>[] = []
  log('per-recording order: drains with and without, interleaved')
  for (let round = 1; round <= settings.rounds; round++) {
    for (const ordered of [true, false]) orderRuns.push(await orderRun(bench, ordered, round))
  }
  const rateRuns: Omit<RateRun, 'stats'>[] = []
  log(`per-endpoint rate: B alone and beside A (${settings.limit}/s), interleaved`)
  for (let round = 1; round <= settings.rateRounds; round++) {
    for (const beside of [false, true]) rateRuns.push(await rateRun(bench, beside, round))
  }
  return { orderRuns, rateRuns }
}

function statsTargets(runs: Awaited<ReturnType<typeof allRuns>>): PushStatsSpec['enterprises'] {
  return [
    ...runs.orderRuns.map(({ label, enterpriseId }) => ({ label, enterpriseId })),
    ...runs.rateRuns.flatMap(({ enterpriseId, endpoints }) =>
      endpoints.map(({ label, endpointId }) => ({
        label,
        enterpriseId,
        endpointId,
        attemptStarts: label.endsWith('-a'),
      })),
    ),
  ]
}

function measureBackend(backend: Backend): Promise<BackendReport> {
  return withPushStorage(backend, async (storage) => {
    log(`${backend}: starting the platform and the receiver`)
    const execArgv = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
    const platform = await startPushPlatform(storage, execArgv)
    const runs = await withRunning(platform, async () => {
      const receiver = await startPushReceiver(platform.ready, settings.callbackConnections, 0)
      return withRunning(receiver, () => allRuns({ storage, platform, receiver }))
    })
    if (profileDir) logProfile(profileDir)
    log(`${backend}: reading the deliveries and their attempts`)
    const stats = await pushStats(storage, statsTargets(runs))
    const statsOf = (label: string) => stats[label] as DeliveryStats
    return {
      backend,
      databaseVersion: platform.ready.databaseVersion,
      serverSettings: platform.ready.serverSettings,
      settings: platform.ready.settings,
      orderRuns: runs.orderRuns.map((run) => ({ ...run, stats: { [run.label]: statsOf(run.label) } })),
      rateRuns: runs.rateRuns.map((run) => ({
        ...run,
        stats: Object.fromEntries(run.endpoints.map(({ label }) => [label, statsOf(label)])),
      })),
      scale: { ...settings, rateA },
    }
  })
}

const machine = machineLine()
const loadBefore = loadavg()[0] as number
const { reports, skipped } = await measureBackends(backends, measureBackend)
const loadAfter = loadavg()[0] as number

const rendered = reports.map(renderBackend)
const section = sectionText(
  [
    `Measured ${machine} (1-minute load average ${format(loadBefore, 1)} at the start, ${format(loadAfter, 1)} at the end).`,
    `\`push-endpoints.bench.ts\`, run by \`npm run bench:push\` after the push section's bench; on PostgreSQL only unless BENCH_BACKENDS says otherwise (the targets are PostgreSQL's, and PGlite would double the run's length). The platform (as \`earshot serve\`, in a child process) and the receiver of the push section above (acks each push, then calls back at once). **Per-recording order**: ${format(settings.deliveries)} deliveries per run to one endpoint, ${settings.rounds} rounds of: with order engaged (${format(settings.deliveries / 2)} recordings imported with audio and transcript: each makes a \`recording.audio_ready\` and a \`recording.transcript_ready\` delivery, and the transcript's waits, \`queued\`, until the audio's is acknowledged), then without (${format(settings.deliveries)} audio-only recordings: none waits). **Per-endpoint rate**: one enterprise, endpoint B (\`recording.audio_ready\` only, no limit) given ${format(settings.rateB)} audio-only recordings, alone, then beside endpoint A (\`recording.transcript_ready\` only, maxPerSecond ${settings.limit}) given ${format(rateA)} transcript-only recordings spread among B's in the same import (separate event types, so that B's callbacks never touch A's deliveries); ${settings.rateRounds} rounds of alone, beside. Every run is one JSON Lines import (one transaction) into an enterprise of its own, after ${format(settings.settleMs / 1000)} s left alone and a CHECKPOINT; drains are timed from the import's commit to the last confirmation (deliveries.confirmed_at), A's rate from its attempts' starts (delivery_attempts.started_at) ${WINDOW.from / 1000}–${WINDOW.to / 1000} s after the commit. A rated endpoint's deliveries are claimed at most maxPerSecond ÷ 10 at a time, each claim moving its next attempt time on by their share of a second (hence A's bursts). Medians of an even number of runs are the mean of the middle two. CPU % is of one core; the PostgreSQL server's is summed over its processes from /proc, whoever's work they do (– when one ended between the readings).`,
    ...rendered.map(({ text }) => text),
  ],
  skipped,
)
publishSection('push-endpoints', section, {
  heading: '## Push endpoints: per-recording order and per-endpoint rate (`npm run bench:push`)',
  after: '<!-- bench:push:end -->',
})
const errors = rendered.reduce((sum, { failures }) => sum + failures.length, 0)
if (errors > 0) {
  log(`\n${errors} problem(s) in the runs: see above`)
  process.exitCode = 1
}
