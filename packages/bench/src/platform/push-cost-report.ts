/**
 * What push-cost.bench.ts measured, and its part of docs/benchmarks.md: per backend, CPU per confirmed
 * delivery of each scenario beside the floor of the same round, the floor's parts, the statements of the
 * drains and what the backends were doing, then the target.
 */
import { format, median, yes } from '../bench-support.js'
import type { CpuSplit } from './push-cost-meter.js'
import { type ActivitySamples, addStatements, type StatementCost } from './push-cost-statements.js'

export const SCENARIOS = ['floor', 'plain', 'ordered', 'plain-kit', 'ordered-kit'] as const
export type Scenario = (typeof SCENARIOS)[number]

const TARGET_RATIO = 1.5
const STATEMENT_ROWS = 14
const ACTIVITY_ROWS = 12

const DESCRIPTIONS: Record<Scenario, string> = {
  floor: 'floor: raw claim loop + bare sealed push and sealed callback with its nonce row',
  plain: 'plain drain (audio only), bench receiver',
  ordered: 'ordered drain (audio + transcript per recording), bench receiver',
  'plain-kit': "plain drain, the Node kit's receiver (`earshot-partner listen`)",
  'ordered-kit': "ordered drain, the Node kit's receiver",
}

export interface Sample {
  scenario: Scenario
  round: number
  deliveries: number
  seconds: number
  /** µs over the run. */
  cpu: CpuSplit
  floorParts?: { loop: CpuSplit; exchange: CpuSplit }
  statements?: StatementCost[] | undefined
  activity?: { samples: number; by: ActivitySamples } | undefined
}

export interface CostReport {
  backend: string
  databaseVersion: string
  statementsUnavailable?: string | undefined
  /** Whether the statements' planning time was counted (pg_stat_statements.track_planning). */
  tracksPlanning?: boolean
  inFlight: number
  samples: Sample[]
}

const ownCost = (sample: Sample) => (sample.cpu.server + sample.cpu.backends) / sample.deliveries
const spread = (values: number[], digits = 0) =>
  `${format(Math.min(...values), digits)} / **${format(median(values), digits)}** / ${format(Math.max(...values), digits)}`

/** Each run's server + backends per delivery against the floor of its round. */
function ratios(report: CostReport, scenario: Scenario): number[] {
  return report.samples
    .filter((sample) => sample.scenario === scenario)
    .map((sample) => {
      const floor = report.samples.find((s) => s.scenario === 'floor' && s.round === sample.round)
      return floor ? ownCost(sample) / ownCost(floor) : Number.NaN
    })
}

function scenarioTable(report: CostReport): string[] {
  const lines = [
    '| scenario | runs | deliveries/s | server µs per delivery | its PostgreSQL backends µs | server + backends µs | ÷ floor of the round | receiver µs |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const scenario of SCENARIOS) {
    const samples = report.samples.filter((sample) => sample.scenario === scenario)
    if (samples.length === 0) continue
    const per = (pick: (cpu: CpuSplit) => number) => samples.map((s) => pick(s.cpu) / s.deliveries)
    const backends = report.backend === 'pglite' ? 'in the process' : spread(per((cpu) => cpu.backends))
    const ratio = scenario === 'floor' ? '1' : `${spread(ratios(report, scenario), 2)}x`
    lines.push(
      `| ${DESCRIPTIONS[scenario]} | ${samples.length} | ${spread(samples.map((s) => s.deliveries / s.seconds))} | ${spread(per((cpu) => cpu.server))} | ${backends} | ${spread(samples.map(ownCost))} | ${ratio} | ${spread(per((cpu) => cpu.receiver))} |`,
    )
  }
  return lines
}

function floorParts(report: CostReport): string {
  const floors = report.samples.filter((sample) => sample.floorParts)
  const part = (pick: (s: Sample) => number) => format(median(floors.map((s) => pick(s) / s.deliveries)))
  const parts = (s: Sample) => s.floorParts as NonNullable<Sample['floorParts']>
  const embedded = report.backend === 'pglite'
  const backends = (pick: (s: Sample) => number, what: string) =>
    embedded ? '' : ` and ${part(pick)} µs in its backends${what}`
  return `The floor's parts, medians per delivery${embedded ? ' (the embedded database works inside each process)' : ''}: the raw claim loop ${part((s) => parts(s).loop.server)} µs in its process${backends((s) => parts(s).loop.backends, '')}; the exchange ${part((s) => parts(s).exchange.server)} µs in the floor server (seal, send, read the answer; open the callback, record its nonce, answer)${backends((s) => parts(s).exchange.backends, ' (the nonce row)')}; the bench receiver ${part((s) => parts(s).exchange.receiver)} µs (open, answer, seal and send the callback).`
}

const statementText = (query: string) => query.replace(/\s+/g, ' ').slice(0, 110).replaceAll('|', '\\|')

function statementTable(report: CostReport, scenario: Scenario): string[] {
  const samples = report.samples.filter((s) => s.scenario === scenario && s.statements)
  if (samples.length === 0) return []
  const deliveries = samples.reduce((sum, s) => sum + s.deliveries, 0)
  const statements = addStatements(samples.map((s) => s.statements as StatementCost[]))
  const total = statements.reduce(
    (sum, s) => ({
      calls: sum.calls + s.calls,
      planMs: sum.planMs + s.planMs,
      execMs: sum.execMs + s.execMs,
      walBytes: sum.walBytes + s.walBytes,
    }),
    { calls: 0, planMs: 0, execMs: 0, walBytes: 0 },
  )
  const perDelivery = (ms: number) => format((1000 * ms) / deliveries, 1)
  const planning = (ms: number) => (report.tracksPlanning ? perDelivery(ms) : 'not counted')
  const row = (name: string, s: Omit<StatementCost, 'query' | 'rows'> & { rows?: number }) =>
    `| ${name} | ${format(s.calls / deliveries, 3)} | ${planning(s.planMs)} | ${perDelivery(s.execMs)} | ${s.rows === undefined ? '' : format(s.rows / s.calls, 1)} | ${format(s.walBytes / deliveries)} |`
  return [
    `Statements of the ${DESCRIPTIONS[scenario]} (pg_stat_statements, ${samples.length} runs, ${format(deliveries)} deliveries; execution time is the statement's time in its backend, waits included; planning is counted where the server sets \`pg_stat_statements.track_planning\`):`,
    '',
    '| statement | calls per delivery | µs planning per delivery | µs executing per delivery | rows per call | WAL bytes per delivery |',
    '|---|---:|---:|---:|---:|---:|',
    ...statements.slice(0, STATEMENT_ROWS).map((s) => row(`\`${statementText(s.query)}\``, s)),
    row(`all ${statements.length} statements`, total),
  ]
}

function activityLine(report: CostReport, scenario: Scenario): string | undefined {
  const samples = report.samples.filter((s) => s.scenario === scenario && s.activity)
  if (samples.length === 0) return undefined
  const by: ActivitySamples = {}
  let taken = 0
  for (const { activity } of samples) {
    taken += activity?.samples ?? 0
    for (const [what, n] of Object.entries(activity?.by ?? {})) by[what] = (by[what] ?? 0) + n
  }
  const active = Object.values(by).reduce((sum, n) => sum + n, 0)
  const shares = Object.entries(by)
    .sort((a, b) => b[1] - a[1])
    .slice(0, ACTIVITY_ROWS)
    .map(([what, n]) => `${format((100 * n) / active)}% ${what.replaceAll('|', '\\|')}`)
  return `pg_stat_activity during the ${DESCRIPTIONS[scenario]}, ${format(taken)} samples: ${format(active / taken, 2)} backends active on average; the most frequent: ${shares.join('; ')}.`
}

export function renderCost(
  report: CostReport,
  settings: { deliveries: number; rounds: number; tenants: number },
): string {
  const orderedRatio = median(ratios(report, 'ordered'))
  const holds = orderedRatio <= TARGET_RATIO
  const target =
    report.backend === 'postgres'
      ? `${yes(holds)} (${format(orderedRatio, 2)}x)`
      : `shown for reference, a PostgreSQL target (${format(orderedRatio, 2)}x)`
  const statements =
    report.backend === 'pglite'
      ? []
      : report.statementsUnavailable
        ? [
            `No per-statement table: pg_stat_statements cannot be read on this server (${report.statementsUnavailable}).`,
            '',
          ]
        : [...statementTable(report, 'ordered'), '', ...statementTable(report, 'plain'), '']
  const activity = (['ordered', 'plain'] as const).flatMap((s) => activityLine(report, s) ?? [])
  return [
    `### ${report.backend === 'postgres' ? 'PostgreSQL' : 'PGlite, data directory on disk'}`,
    '',
    `${report.databaseVersion}. ${format(settings.deliveries)} deliveries per run, ${settings.rounds} rounds, ${settings.tenants ? `${format(settings.tenants)} other enterprises on the platform (each with an endpoint, idle), ` : ''}${report.inFlight} pushes in flight to the endpoint (the per-URL limit; the floor's loop and exchange run at the same). A drain is measured from the import's answer: its endpoint is held to a push a second while the import commits its chunks, and lifted once the window is open; the few deliveries confirmed before it opened are counted neither in its CPU nor in its deliveries. CPU per confirmed delivery, min / **median** / max over the rounds:`,
    '',
    ...scenarioTable(report),
    '',
    floorParts(report),
    '',
    ...statements,
    ...(activity.length ? [...activity, ''] : []),
    `Target: the platform and its backends within ${TARGET_RATIO}x of the floor with order engaged (ordered drain, median of the rounds' ratios): ${target}`,
  ].join('\n')
}
