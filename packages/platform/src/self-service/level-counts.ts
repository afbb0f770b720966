import type { Levels } from '@earshot/protocol'

/*
 * Latencies counted by value, and the figures read from such counts. A latency is counted as the nearest
 * power of 1.02 (rounded to whole milliseconds; 0 under a millisecond), so that an hour's counts stay a few
 * hundred values whatever its number of deliveries, and a percentile is within 1% of the one the values
 * would give. Percentiles are nearest-rank over the counted values.
 */

const STEP = Math.log(1.02)

/** A latency in milliseconds (a float8 SQL column) as it is counted. */
export function latencyBucketSql(v: string): string {
  return `CASE WHEN ${v} < 1 THEN 0 ELSE floor(exp(floor(ln(${v}) / ${STEP}::float8 + 0.5) * ${STEP}::float8) + 0.5) END`
}

/** The same rounding, for who checks the figures against the rows. */
export function latencyBucket(ms: number): number {
  return ms < 1 ? 0 : Math.floor(Math.exp(Math.floor(Math.log(ms) / STEP + 0.5) * STEP) + 0.5)
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
