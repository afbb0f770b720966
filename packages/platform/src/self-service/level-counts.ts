import type { Levels } from '@earshot/protocol'

/*
 * Latencies counted by value, and the figures read from such counts. Values are whole milliseconds under a
 * second and rounded to three significant digits above (LATENCY_BUCKET_SQL), so that an hour's counts stay
 * small whatever its number of deliveries; percentiles are nearest-rank over them.
 */

/** A latency in milliseconds (a SQL expression) as it is counted. */
export function latencyBucketSql(ms: string): string {
  return `(CASE WHEN (${ms}) < 1000 THEN round(${ms}) ELSE round((${ms})::numeric, 2 - floor(log((${ms})::numeric))::int) END)::float8`
}

/** The same rounding, for who checks the figures against the rows. */
export function latencyBucket(ms: number): number {
  if (ms < 1000) return Math.round(ms)
  const unit = 10 ** (String(Math.floor(ms)).length - 3)
  return Math.round(ms / unit) * unit
}

/** The counts of a span of deliveries: first attempts and receipts by latency, and first attempts acknowledged. */
export interface LevelCounts {
  firstMs: Record<string, number>
  firstAcked: number
  receiptMs: Record<string, number>
}

export function emptyCounts(): LevelCounts {
  return { firstMs: {}, firstAcked: 0, receiptMs: {} }
}

export function addCounts(into: LevelCounts, from: LevelCounts): LevelCounts {
  for (const [ms, n] of Object.entries(from.firstMs)) into.firstMs[ms] = (into.firstMs[ms] ?? 0) + n
  for (const [ms, n] of Object.entries(from.receiptMs)) into.receiptMs[ms] = (into.receiptMs[ms] ?? 0) + n
  into.firstAcked += from.firstAcked
  return into
}

export function levelsOf(counts: LevelCounts, backlog: number): Levels {
  const attempted = total(counts.firstMs)
  return {
    firstAttemptP50Ms: nearestRank(counts.firstMs, 0.5),
    firstAttemptP95Ms: nearestRank(counts.firstMs, 0.95),
    firstAttemptAckShare: attempted === 0 ? null : counts.firstAcked / attempted,
    ackToReceiptP95Ms: nearestRank(counts.receiptMs, 0.95),
    backlog,
  }
}

function total(counts: Record<string, number>): number {
  let sum = 0
  for (const n of Object.values(counts)) sum += n
  return sum
}

/** The smallest value with at least p of the values at or below it; null without values. */
function nearestRank(counts: Record<string, number>, p: number): number | null {
  const rank = Math.ceil(p * total(counts))
  if (rank === 0) return null
  let seen = 0
  for (const ms of Object.keys(counts)
    .map(Number)
    .sort((a, b) => a - b)) {
    seen += counts[ms] as number
    if (seen >= rank) return ms
  }
  return null
}
