/**
 * `npm run bench:push` (after push-endpoints.bench.js): CPU per confirmed delivery, beside the floor of a
 * delivery measured in the same rounds, on each backend (BENCH_BACKENDS, default `pglite,postgres`).
 *
 * After a warm-up round that is not kept, each round (BENCH_COST_ROUNDS, default 3) runs, in this order, BENCH_COST_DELIVERIES deliveries
 * (default 6,000) of each scenario, each on an enterprise of its own after a pause and a CHECKPOINT:
 *
 * - floor: the raw claim loop (push-raw-loop.ts: one claim share and one state update per row, as many in
 *   flight as the per-URL limit), then the bare exchange (floor-server.ts, floor-push.ts): each push
 *   sealed and POSTed on node:http to a bench receiver, whose sealed receipt callback the floor server
 *   opens and records the nonce of. Each on a database of its own;
 * - plain: audio-only recordings imported at once (one `recording.audio_ready` delivery each), to the
 *   bench receiver (push-bench-receiver.ts: opens, answers, calls back at once);
 * - ordered: half as many recordings with audio and transcript (the transcript's delivery waits for the
 *   audio's acknowledgement), to the bench receiver;
 * - plain and ordered again to the Node kit's receiver (`earshot-partner listen`, push-cost-kit.ts):
 *   stores each recording, answers, confirms through its durable outbox.
 *
 * BENCH_COST_SCENARIOS (default all: floor,plain,ordered,plain-kit,ordered-kit) names the scenarios run;
 * BENCH_COST_TENANTS (default 0) other enterprises on the platform, each with an endpoint, idle.
 *
 * CPU is read from /proc from the import's answer (the commit) to the last confirmation, the drain's endpoint
 * held to a push a second until then: the server (the platform, or the raw loop and the floor server), its
 * PostgreSQL backends (its database's), the receiver.
 * On PostgreSQL, with pg_stat_statements preloaded, each drain's statements are read (the per-statement
 * table); BENCH_COST_SAMPLE_MS samples pg_stat_activity that often during the drains; with
 * BENCH_COST_PROFILE_DIR the platform runs with --cpu-prof into that directory. The results go to
 * docs/benchmarks.md between the push-cost markers.
 */

import { setTimeout as sleep } from 'node:timers/promises'
import { loadConfig } from '@earshot/platform'
import { generateSecret, PushEventType } from '@earshot/protocol'
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
import { type RunningChild, startChild } from '../child.js'
import type { BareServerReady } from './bare-server.js'
import { databaseNameOf } from './cpu-proc.js'
import type { FloorServerSpec } from './floor-server.js'
import { logProfile } from './media-profile.js'
import {
  type AdminApi,
  AUDIO_AND_TRANSCRIPT,
  AUDIO_ONLY,
  addEndpoint,
  adminOf,
  benchEnterprise,
  type Credentials,
  importRecordings,
  jsonLines,
  progressOf,
  registerWithReceiver,
} from './push-bench-api.js'
import type { PushReceiverReady } from './push-bench-receiver.js'
import {
  type Storage,
  settle,
  startPushPlatform,
  startPushReceiver,
  withPushStorage,
  withRunning,
} from './push-bench-run.js'
import { startKitReceiver } from './push-cost-kit.js'
import { type BackendReader, backendsOf, type CpuSplit, startWindow } from './push-cost-meter.js'
import { type CostReport, renderCost, type Sample, SCENARIOS, type Scenario } from './push-cost-report.js'
import { type StatementsReader, statementsReader } from './push-cost-statements.js'
import type { PushPlatformReady } from './push-platform.js'
import type { RawLoopReady, RawLoopSpec } from './push-raw-loop.js'

const settings = {
  deliveries: 2 * Math.ceil(integerSetting('BENCH_COST_DELIVERIES', 6000, 2) / 2),
  rounds: integerSetting('BENCH_COST_ROUNDS', 3),
  settleMs: integerSetting('BENCH_COST_SETTLE_MS', 3000, 0),
  sampleMs: integerSetting('BENCH_COST_SAMPLE_MS', 0, 0),
  scenarios: (process.env.BENCH_COST_SCENARIOS || SCENARIOS.join(',')).split(','),
  callbackConnections: integerSetting('BENCH_PUSH_CALLBACK_CONNECTIONS', 16),
  tenants: integerSetting('BENCH_COST_TENANTS', 0, 0),
}
const profileDir = process.env.BENCH_COST_PROFILE_DIR || undefined
const unknown = settings.scenarios.filter((name) => !(SCENARIOS as readonly string[]).includes(name))
if (unknown.length > 0)
  throw new Error(
    `BENCH_COST_SCENARIOS: no scenario ${unknown.join(', ')} (there are ${SCENARIOS.join(', ')})`,
  )
const platformConfig = loadConfig(process.env)
/** Pushes in flight to one endpoint: what the floor's exchange and raw loop run at too. */
const inFlight = platformConfig.pushConcurrencyPerUrl
const backends = backendsSetting()
const FLOOR_ENTERPRISE = { enterpriseId: 1, keyVersion: 1, secret: generateSecret() }
cleanUpOnInterrupt()

interface Floor {
  server: RunningChild<BareServerReady>
  receiver: RunningChild<PushReceiverReady>
  storage: Storage
  backends?: BackendReader
  rawStorage: Storage
}

interface Bench {
  storage: Storage
  platform: RunningChild<PushPlatformReady>
  receiver: RunningChild<PushReceiverReady>
  backends?: BackendReader
  statements?: StatementsReader
  floor: Floor
}

const addSplits = (a: CpuSplit, b: CpuSplit): CpuSplit => ({
  server: a.server + b.server,
  backends: a.backends + b.backends,
  receiver: a.receiver + b.receiver,
})

/** The raw claim loop's drain of `deliveries` rows, in a child on a database of its own. */
async function rawLoop(floor: Floor): Promise<{ seconds: number; cpu: CpuSplit }> {
  await settle(floor.rawStorage, settings.settleMs)
  const spec: RawLoopSpec = {
    ...floor.rawStorage,
    poolSize: platformConfig.databasePoolSize,
    rows: settings.deliveries,
    inFlight: [inFlight],
  }
  const child = await startChild<RawLoopReady>(new URL('./push-raw-loop.js', import.meta.url).href, {
    BENCH_RAW_LOOP_SPEC: JSON.stringify(spec),
  })
  await child.stop()
  const [run] = child.ready.runs
  if (!run) throw new Error('the raw loop reported no run')
  const micros = (percent: number) => (percent / 100) * run.seconds * 1e6
  return {
    seconds: run.seconds,
    cpu: { server: micros(run.cpuPercent), backends: micros(run.backendCpuPercent), receiver: 0 },
  }
}

/** The bare exchange: sealed pushes from the floor server to a receiver, whose callbacks it takes. */
async function bareExchange(floor: Floor, label: string): Promise<{ seconds: number; cpu: CpuSplit }> {
  await settle(floor.storage, settings.settleMs)
  await registerWithReceiver(floor.receiver.ready.url, label, FLOOR_ENTERPRISE)
  const started = performance.now()
  const end = await startWindow({
    servers: [floor.server.pid],
    backends: floor.backends,
    receivers: [floor.receiver.pid],
  })
  const sent = fetch(`${floor.server.ready.url}/floor/push`, {
    method: 'POST',
    body: JSON.stringify({
      url: `${floor.receiver.ready.url}/push/${label}`,
      ...FLOOR_ENTERPRISE,
      count: settings.deliveries,
      inFlight,
    }),
  })
  await waitFor(async () => (await progressOf(floor.receiver.ready.url, label)).confirmed, label)
  if (!(await sent).ok) throw new Error(`the floor exchange ${label} failed: ${await (await sent).text()}`)
  return { seconds: (performance.now() - started) / 1000, cpu: await end() }
}

async function floorRun(floor: Floor, round: number): Promise<Sample> {
  const loop = await rawLoop(floor)
  const exchange = await bareExchange(floor, `floor-${round}`)
  return {
    scenario: 'floor',
    round,
    deliveries: settings.deliveries,
    seconds: loop.seconds + exchange.seconds,
    cpu: addSplits(loop.cpu, exchange.cpu),
    floorParts: { loop: loop.cpu, exchange: exchange.cpu },
  }
}

/** A drain's recordings: audio-only, or half as many with audio and transcript. */
function drainBody(label: string, ordered: boolean): string {
  return ordered
    ? jsonLines(label, 0, settings.deliveries / 2, AUDIO_AND_TRANSCRIPT)
    : jsonLines(label, 0, settings.deliveries, AUDIO_ONLY)
}

/** Which receiver a drain pushes to: the bench receiver, or the kit's started for the enterprise. */
async function drainTarget(bench: Bench, label: string, kit: boolean) {
  const { platform, receiver } = bench
  if (!kit) {
    const credentials = await benchEnterprise(platform.ready, receiver.ready.url, label)
    const confirmed = async () => (await progressOf(receiver.ready.url, label)).callbacks
    return { credentials, pid: receiver.pid, confirmed, stop: async () => {} }
  }
  const credentials: Credentials = await benchEnterprise(platform.ready, receiver.ready.url, label, null)
  const listener = await startKitReceiver(platform.ready.partnerUrl, credentials)
  await addEndpoint(platform.ready, credentials.enterpriseId, {
    url: listener.url,
    eventTypes: [PushEventType.AUDIO_READY, PushEventType.TRANSCRIPT_READY],
  })
  return { credentials, pid: listener.pid, confirmed: async () => listener.confirmed(), stop: listener.stop }
}

/** Sets the enterprise's endpoints to `maxPerSecond` pushes a second (null: no limit). */
async function rateEndpoints(
  platform: AdminApi,
  enterpriseId: number,
  endpointIds: readonly number[],
  maxPerSecond: number | null,
) {
  for (const endpointId of endpointIds)
    await adminOf(platform).updateEndpoint(enterpriseId, endpointId, { maxPerSecond })
}

/** Other enterprises on the platform, each with an endpoint and nothing to push, made 8 at a time. */
async function idleTenants(platform: AdminApi, receiverUrl: string): Promise<void> {
  let next = 0
  const maker = async () => {
    for (let n = next++; n < settings.tenants; n = next++)
      await adminOf(platform).createEnterprise(`Idle tenant ${n}`, `${receiverUrl}/push/idle-${n}`)
  }
  await Promise.all(Array.from({ length: 8 }, maker))
}

/** Polls `confirmed` until every delivery of the run is confirmed; gives up after 30 s without progress. */
async function waitFor(confirmed: () => Promise<number>, label: string): Promise<void> {
  let last = -1
  let lastChange = performance.now()
  for (;;) {
    const now = await confirmed()
    if (now >= settings.deliveries) return
    if (now !== last) [last, lastChange] = [now, performance.now()]
    else if (performance.now() - lastChange > 30_000)
      throw new Error(`${label}: ${now} of ${settings.deliveries} confirmed, none for 30 s`)
    await sleep(50)
  }
}

async function drainRun(bench: Bench, scenario: Scenario, round: number): Promise<Sample> {
  const label = `${scenario}-${round}`
  const ordered = scenario.startsWith('ordered')
  await settle(bench.storage, settings.settleMs)
  const target = await drainTarget(bench, label, scenario.endsWith('-kit'))
  try {
    log(`  ${label}: ${format(settings.deliveries)} deliveries`)
    const body = drainBody(label, ordered)
    const { enterpriseId } = target.credentials
    const endpoints = await adminOf(bench.platform.ready).listEnterpriseEndpoints(enterpriseId)
    const endpointIds = endpoints.map((endpoint) => endpoint.endpointId)
    // The import commits in chunks, and pushing would start with the first, sharing the cores with the
    // import before the window opens: the endpoint is held to a push a second until then.
    await rateEndpoints(bench.platform.ready, enterpriseId, endpointIds, 1)
    const imported = await importRecordings(bench.platform.ready, enterpriseId, body)
    const database = databaseNameOf(bench.storage.databaseUrl ?? 'postgres://-/')
    await bench.statements?.reset()
    const sampling = settings.sampleMs && bench.statements?.sampleActivity(database, settings.sampleMs)
    // What the rate let through before the window opened is counted neither in its CPU nor in its deliveries.
    const early = await target.confirmed()
    const end = await startWindow({
      servers: [bench.platform.pid],
      backends: bench.backends,
      receivers: [target.pid],
    })
    await rateEndpoints(bench.platform.ready, enterpriseId, endpointIds, null)
    await waitFor(target.confirmed, label)
    const cpu = await end()
    const seconds = (Date.now() - imported.acked) / 1000
    const activity = sampling ? await sampling() : undefined
    const statements = await bench.statements?.read(database)
    return { scenario, round, deliveries: settings.deliveries - early, seconds, cpu, statements, activity }
  } finally {
    await target.stop()
  }
}

async function allRuns(bench: Bench): Promise<Sample[]> {
  const samples: Sample[] = []
  const scenarios = SCENARIOS.filter((s) => settings.scenarios.includes(s))
  // Round 0 warms up the processes (their compiled code, their connections' plans) and is not kept.
  for (let round = 0; round <= settings.rounds; round++) {
    log(round === 0 ? 'round 0 (warm-up, not kept)' : `round ${round}`)
    for (const scenario of scenarios) {
      const sample =
        scenario === 'floor' ? await floorRun(bench.floor, round) : await drainRun(bench, scenario, round)
      const perDelivery = (sample.cpu.server + sample.cpu.backends) / sample.deliveries
      log(
        `  ${scenario}: ${format(perDelivery)} µs server + backends per delivery over ${format(sample.deliveries)}, ${format(sample.deliveries / sample.seconds)}/s`,
      )
      if (round > 0) samples.push(sample)
    }
  }
  return samples
}

/** The floor's server and receiver on a database of their own, and another for the raw loop. */
async function withFloor<T>(backend: Backend, use: (floor: Floor) => Promise<T>): Promise<T> {
  return withPushStorage(backend, (storage) =>
    withPushStorage(backend, async (rawStorage) => {
      const spec: FloorServerSpec = { ...storage, recordReceipts: false, enterprises: [FLOOR_ENTERPRISE] }
      const server = await startChild<BareServerReady>(new URL('./floor-server.js', import.meta.url).href, {
        BENCH_FLOOR_SPEC: JSON.stringify(spec),
      })
      return withRunning(server, async () => {
        const partner = { partnerUrl: server.ready.url } as PushPlatformReady
        const receiver = await startPushReceiver(partner, settings.callbackConnections, 0)
        const backends = await backendsOf(storage.databaseUrl)
        return withRunning(receiver, () => use({ server, receiver, storage, backends, rawStorage })).finally(
          () => backends?.close(),
        )
      })
    }),
  )
}

function measureBackend(backend: Backend): Promise<CostReport> {
  return withFloor(backend, (floor) =>
    withPushStorage(backend, async (storage) => {
      log(`${backend}: starting the platform and the receiver`)
      const execArgv = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
      const platform = await startPushPlatform(storage, execArgv)
      const statements = storage.databaseUrl
        ? await statementsReader(process.env.DATABASE_URL as string)
        : undefined
      const platformBackends = await backendsOf(storage.databaseUrl)
      try {
        const samples = await withRunning(platform, async () => {
          const receiver = await startPushReceiver(platform.ready, settings.callbackConnections, 0)
          if (settings.tenants > 0) {
            log(`${backend}: ${format(settings.tenants)} idle enterprises, each with an endpoint`)
            await idleTenants(platform.ready, receiver.ready.url)
          }
          const bench = { storage, platform, receiver, backends: platformBackends, statements, floor }
          return withRunning(receiver, () => allRuns(bench))
        })
        if (profileDir) logProfile(profileDir)
        return {
          backend,
          databaseVersion: platform.ready.databaseVersion,
          statementsUnavailable: statements?.unavailable,
          tracksPlanning: statements?.tracksPlanning,
          inFlight,
          samples,
        }
      } finally {
        await platformBackends?.close()
        await statements?.close()
      }
    }),
  )
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const rendered = reports.map((report) => renderCost(report, settings))
publishSection('push-cost', sectionText([`Measured ${machine}.`, ...rendered], skipped), {
  heading: '## Push: CPU per confirmed delivery, beside its floor (`npm run bench:push`)',
  after: '<!-- bench:push-endpoints:end -->',
})
