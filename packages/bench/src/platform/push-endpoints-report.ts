/**
 * What push-endpoints.bench.ts measured, and its part of docs/benchmarks.md: per backend, a table per
 * scenario (per-recording order, per-endpoint rate), then the targets.
 */
import { format, median, ms, yes } from '../bench-support.js'
import type { ImportTiming } from './push-bench-api.js'
import type { ReceiverProgress } from './push-bench-receiver.js'
import { drainFigures } from './push-bench-run.js'
import type { PushPlatformReady } from './push-platform.js'
import type { DeliveryStats } from './push-stats.js'

/** A's rate is read over this window, ms after the import's commit. */
export const WINDOW = { from: 2000, to: 12_000 } as const
const TARGET_ORDERED_PER_SECOND = 1500
/** The drain with order engaged against the drain without it, medians. */
const TARGET_ORDER_RATIO = 0.9
const TARGET_LIMIT_TOLERANCE = 0.1
/** B's drain beside A against B alone, medians. */
const TARGET_NEIGHBOUR_RATIO = 0.9
/** A's attempts less than this apart belong to one claim. */
const BURST_GAP_MS = 20

/** One receiver label waited for: its pushes confirmed, and CPU use (% of a core) since the previous wait. */
export interface Wait {
  label: string
  expected: number
  progress: ReceiverProgress
  stalled: boolean
  cpu: number[]
}

export interface TimedRun {
  label: string
  enterpriseId: number
  imported: ImportTiming
  /** One per receiver label: the run's, or B's then (beside) A's. */
  waits: Wait[]
  /** By receiver label; A's with the start of each of its attempts. */
  stats: Record<string, DeliveryStats>
}

export interface OrderRun extends TimedRun {
  ordered: boolean
}

export interface RateRun extends TimedRun {
  beside: boolean
  endpoints: { label: string; endpointId: number }[]
}

export interface BackendReport {
  backend: 'pglite' | 'postgres'
  databaseVersion: string
  serverSettings: string
  settings: PushPlatformReady['settings']
  orderRuns: OrderRun[]
  rateRuns: RateRun[]
  scale: { deliveries: number; limit: number; rateA: number; rateB: number }
}

/** The issue's targets are PostgreSQL's: on PGlite they are shown for reference. */
const judged = (report: BackendReport, holds: boolean) =>
  report.backend === 'postgres' ? yes(holds) : 'a PostgreSQL target, shown for reference'

const statsOf = (run: TimedRun, label: string) => run.stats[label] as DeliveryStats

/** Confirmed/s from the import's commit to the last confirmation of the label's deliveries. */
const drainOf = (run: TimedRun, label: string) =>
  drainFigures({ imports: [run.imported], stats: statsOf(run, label) })

function spreadOf(values: number[]): string {
  if (values.length === 0) return '–'
  return `${format(Math.min(...values))} / **${format(median(values))}** / ${format(Math.max(...values))}`
}

/** CPU % of the platform, the receiver and (PostgreSQL) the server. */
const cpuText = (report: BackendReport, wait: Wait | undefined) =>
  wait
    ? wait.cpu
        .slice(0, report.backend === 'postgres' ? 3 : 2)
        // Negative when a PostgreSQL process with CPU time of its own ended between the readings.
        .map((percent) => (percent < 0 ? '–' : format(percent)))
        .join(' / ')
    : '–'

function orderRow(report: BackendReport, run: OrderRun): string {
  const stats = statsOf(run, run.label)
  const drain = drainOf(run, run.label)
  const { deliveries } = report.scale
  const what = run.ordered
    ? `with order: ${format(deliveries / 2)} recordings × (audio, transcript)`
    : `without: ${format(deliveries)} audio-only recordings`
  const order = run.ordered ? `${format(stats.outOfOrder)} / ${format(stats.beforeAck)}` : '–'
  return `| ${run.label} | ${what} | ${format(stats.deliveries)} | ${format(drain.importSeconds, 2)} s | **${format(drain.confirmedPerSecond)}** (${format(drain.seconds, 2)} s) | ${ms(stats.firstP50)} / ${ms(stats.firstP99)} | ${ms(stats.confirmP50)} / ${ms(stats.confirmP99)} | ${ms(stats.attemptP50)} / ${ms(stats.attemptP99)} / ${ms(stats.attemptMean)} | ${format(stats.attempts)} (${format(stats.repeated)}) | ${order} | ${cpuText(report, run.waits[0])} |`
}

function orderFigures(report: BackendReport) {
  const rates = (ordered: boolean) =>
    report.orderRuns
      .filter((run) => run.ordered === ordered)
      .map((run) => drainOf(run, run.label).confirmedPerSecond)
  const ordered = report.orderRuns.filter((run) => run.ordered).map((run) => statsOf(run, run.label))
  return {
    ordered: rates(true),
    unordered: rates(false),
    ratio: median(rates(true)) / median(rates(false)),
    recordings: ordered.reduce((sum, stats) => sum + stats.deliveries / 2, 0),
    outOfOrder: ordered.reduce((sum, stats) => sum + stats.outOfOrder, 0),
    beforeAck: ordered.reduce((sum, stats) => sum + stats.beforeAck, 0),
    ceiling:
      (1000 * report.settings.pushConcurrencyPerUrl) /
      median(report.orderRuns.map((run) => statsOf(run, run.label).attemptMean)),
  }
}

function orderPart(report: BackendReport): { lines: string[]; targets: string[] } {
  const figures = orderFigures(report)
  const perUrl = report.settings.pushConcurrencyPerUrl
  const lines = [
    '#### Per-recording order: the backlog drain with and without it',
    '',
    `| run | recordings | deliveries | import | confirmed/s (commit → last confirmation) | creation → first attempt p50 / p99 ms | creation → confirmed p50 / p99 ms | push attempt p50 / p99 / mean ms | attempts (repeated) | transcripts first attempted before the audio's first attempt / its ack | CPU % platform / receiver${report.backend === 'postgres' ? ' / PostgreSQL' : ''} |`,
    '|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|',
    ...report.orderRuns.map((run) => orderRow(report, run)),
    '',
    '| drain, confirmed/s | min / **median** / max |',
    '|---|---:|',
    `| with order engaged | ${spreadOf(figures.ordered)} |`,
    `| without | ${spreadOf(figures.unordered)} |`,
    `| ratio of the medians | **${format(100 * figures.ratio)}%** |`,
    '',
    `Note: at most ${perUrl} pushes are in flight to one endpoint (EARSHOT_PUSH_CONCURRENCY_PER_URL), and the runner frees a push's slot as soon as its HTTP exchange ends: ${perUrl} ÷ the mean push attempt (delivery_attempts.duration_ms, the exchange as the dispatcher times it; median over these runs) is ${format(figures.ceiling)}/s, the most a drain to one endpoint could reach with attempts that long.`,
  ]
  const orderedMedian = median(figures.ordered)
  const targets = [
    `(a) the drain with per-recording order engaged ≥ ${100 * TARGET_ORDER_RATIO}% of the same drain without it (medians): ${judged(report, figures.ratio >= TARGET_ORDER_RATIO)} (${format(100 * figures.ratio)}%: ${format(orderedMedian)} against ${format(median(figures.unordered))} confirmed/s)`,
    `(a) and still ≥ ${format(TARGET_ORDERED_PER_SECOND)} confirmed/s (median of the drains with order engaged): ${judged(report, orderedMedian >= TARGET_ORDERED_PER_SECOND)} (${format(orderedMedian)}/s)`,
    `(a) every recording's transcript first attempted after its audio's first attempt (delivery_attempts): ${yes(figures.outOfOrder === 0)} (${format(figures.outOfOrder)} violations among ${format(figures.recordings)} recordings; ${format(figures.beforeAck)} transcripts attempted before the audio's acknowledged attempt ended)`,
  ]
  return { lines, targets }
}

/** Pushes per second among `starts` (ms after the commit) in [from, to). */
function rateBetween(starts: number[], from: number, to: number): number {
  return starts.filter((at) => at >= from && at < to).length / ((to - from) / 1000)
}

/** A limited endpoint's attempts come in bursts (one claim each): their median size, and interval (median, mean), ms. */
function burstsOf(starts: number[]): { size: number; intervalMs: number; meanMs: number } {
  const bursts: { at: number; size: number }[] = []
  for (const at of starts) {
    const last = bursts.at(-1)
    if (last && at - last.at < BURST_GAP_MS) last.size++
    else bursts.push({ at, size: 1 })
  }
  const intervals = bursts.slice(1).map((burst, i) => burst.at - (bursts[i] as { at: number }).at)
  return {
    size: median(bursts.map((burst) => burst.size)),
    intervalMs: median(intervals),
    meanMs: intervals.reduce((sum, interval) => sum + interval, 0) / intervals.length,
  }
}

/**
 * A's pushes (ms after the commit): the rate over the window and each second's count in it, the rates
 * while B drains and after, and A's bursts.
 */
function limitedFigures(run: RateRun) {
  const [b, a] = run.endpoints
  const bDrain = drainOf(run, b?.label as string)
  const aStats = statsOf(run, a?.label as string)
  const committed = Math.min(bDrain.committed, aStats.firstAttempt)
  const starts = (aStats.attemptStarts ?? []).map((at) => at - committed)
  const perSecond = Array.from({ length: (WINDOW.to - WINDOW.from) / 1000 }, (_, i) =>
    Math.round(rateBetween(starts, WINDOW.from + 1000 * i, WINDOW.from + 1000 * (i + 1))),
  )
  const bEnd = bDrain.seconds * 1000
  const end = (starts.at(-1) ?? Number.NaN) + 1
  return {
    rate: rateBetween(starts, WINDOW.from, WINDOW.to),
    perSecond,
    duringB: rateBetween(starts, 0, bEnd),
    afterB: end > bEnd ? rateBetween(starts, bEnd, end) : Number.NaN,
    bursts: burstsOf(starts),
    bDrain,
  }
}

function rateRow(report: BackendReport, run: RateRun): string {
  const [b, a] = run.endpoints
  const bStats = statsOf(run, b?.label as string)
  const bDrain = drainOf(run, b?.label as string)
  const bText = `**${format(bDrain.confirmedPerSecond)}** (${format(bStats.confirmed)} in ${format(bDrain.seconds, 2)} s; first attempt p99 ${ms(bStats.firstP99)} ms)`
  if (!a) {
    return `| ${run.label} | ${format(bStats.deliveries)} | – | ${bText} | – | – | – | ${cpuText(report, run.waits[0])} | – |`
  }
  const aStats = statsOf(run, a.label)
  const limited = limitedFigures(run)
  const aText = `**${format(limited.rate, 1)}** (each second: ${Math.min(...limited.perSecond)}–${Math.max(...limited.perSecond)})`
  const both = `${format(limited.duringB, 1)} / ${format(limited.afterB, 1)}`
  const { size, intervalMs, meanMs } = limited.bursts
  const bursts = `${format(size)} every ${format(intervalMs)} ms (mean ${format(meanMs)} ms)`
  return `| ${run.label} | ${format(bStats.deliveries)} | ${format(aStats.deliveries)} | ${bText} | ${aText} | ${both} | ${bursts} | ${cpuText(report, run.waits[0])} | ${cpuText(report, run.waits[1])} |`
}

function ratePart(report: BackendReport): { lines: string[]; targets: string[] } {
  const { limit } = report.scale
  const bRates = (beside: boolean) =>
    report.rateRuns
      .filter((run) => run.beside === beside)
      .map((run) => drainOf(run, run.endpoints[0]?.label as string).confirmedPerSecond)
  const limited = report.rateRuns.filter((run) => run.beside).map(limitedFigures)
  const limitedRates = limited.map((figures) => figures.rate)
  const together = limited.map((figures) => figures.bDrain.confirmedPerSecond + figures.duringB)
  const ratio = median(bRates(true)) / median(bRates(false))
  const postgres = report.backend === 'postgres' ? ' / PostgreSQL' : ''
  const lines = [
    `#### Per-endpoint rate: B unlimited, alone and beside A (maxPerSecond ${limit})`,
    '',
    `| run | B deliveries | A deliveries | B confirmed/s (commit → B's last confirmation) | A pushes/s, started ${WINDOW.from / 1000}–${WINDOW.to / 1000} s after the commit | A pushes/s while B drains / after | A's pushes: median burst, and interval | CPU % platform / receiver${postgres} while B drains | CPU %, then while A alone drains |`,
    '|---|---:|---:|---|---|---:|---:|---:|---:|',
    ...report.rateRuns.map((run) => rateRow(report, run)),
    '',
    `B's drain, confirmed/s, min / **median** / max: alone ${spreadOf(bRates(false))}; beside A ${spreadOf(bRates(true))}; ratio of the medians **${format(ratio, 2)}**. B's and A's pushes together while B drains beside A: ${spreadOf(together)}/s, ${format(median(together) / median(bRates(false)), 2)} of B alone.`,
  ]
  const low = limit * (1 - TARGET_LIMIT_TOLERANCE)
  const high = limit * (1 + TARGET_LIMIT_TOLERANCE)
  const held = limitedRates.length > 0 && limitedRates.every((rate) => rate >= low && rate <= high)
  const targets = [
    `(b) the endpoint limited to ${limit}/s gets ${limit}/s ± ${100 * TARGET_LIMIT_TOLERANCE}% (${format(low)}–${format(high)}/s, its pushes started ${WINDOW.from / 1000}–${WINDOW.to / 1000} s after the commit, every round): ${judged(report, held)} (${limitedRates.map((rate) => `${format(rate, 1)}/s`).join(', ')})`,
    `(b) while the other endpoint's drain is unchanged within noise (beside A / alone, medians, ≥ ${TARGET_NEIGHBOUR_RATIO}): ${judged(report, ratio >= TARGET_NEIGHBOUR_RATIO)} (${format(ratio, 2)}: ${format(median(bRates(true)))} against ${format(median(bRates(false)))} confirmed/s)`,
  ]
  return { lines, targets }
}

function waitFailures(run: TimedRun, wait: Wait): string[] {
  const stats = statsOf(run, wait.label)
  const { progress } = wait
  const failures: string[] = []
  if (wait.stalled)
    failures.push(
      `${wait.label}: gave up without progress (${progress.callbacks} of ${wait.expected} callbacks)`,
    )
  if (stats.deliveries !== wait.expected || stats.confirmed !== wait.expected) {
    failures.push(
      `${wait.label}: ${format(stats.deliveries)} deliveries, ${format(stats.confirmed)} confirmed, ${format(wait.expected)} expected`,
    )
  }
  if (stats.failedAttempts > 0) failures.push(`${wait.label}: ${stats.failedAttempts} failed push attempts`)
  if (progress.badPushes > 0 || progress.callbackFailures > 0) {
    failures.push(
      `${wait.label}: ${progress.badPushes} pushes not opened, ${progress.callbackFailures} callbacks given up`,
    )
  }
  if (progress.errorSamples.length > 0) {
    failures.push(
      `${wait.label}: ${progress.callbackRetries} callback retries; e.g. \`${progress.errorSamples[0]}\``,
    )
  }
  return failures
}

export function renderBackend(report: BackendReport): { text: string; failures: string[] } {
  const order = orderPart(report)
  const rate = ratePart(report)
  const failures = [...report.orderRuns, ...report.rateRuns].flatMap((run) =>
    run.waits.flatMap((wait) => waitFailures(run, wait)),
  )
  const { settings } = report
  const lines = [
    report.backend === 'pglite'
      ? '### PGlite, data directory on disk, inside the platform process'
      : '### PostgreSQL',
    '',
    `${report.databaseVersion.split(',')[0]}${report.serverSettings ? ` (${report.serverSettings})` : ''}. Platform: EARSHOT_PUSH_CONCURRENCY ${settings.pushConcurrency}, EARSHOT_PUSH_CONCURRENCY_PER_URL ${settings.pushConcurrencyPerUrl} (per endpoint), ${report.backend === 'postgres' ? `database pool ${settings.databasePoolSize}` : 'one PGlite instance'}.`,
    '',
    ...order.lines,
    '',
    ...rate.lines,
    '',
    'Targets:',
    '',
    ...[...order.targets, ...rate.targets].map((target) => `- ${target}`),
  ]
  if (failures.length > 0) lines.push('', '**Errors:**', '', ...failures.map((failure) => `- ${failure}`))
  return { text: lines.join('\n'), failures }
}
