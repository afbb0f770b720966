import type { Levels } from '@earshot/protocol'

/*
 * Latencies counted by value, and the figures read from such counts. Values are whole milliseconds under a
 * second and rounded to three significant digits above (latencyBucketSql), so that an hour's counts stay
 * small whatever its number of deliveries; percentiles are nearest-rank over them.
 */

/** A latency in milliseconds (a float8 column) as it is counted: plain float arithmetic, a decade at a time. */
export function latencyBucketSql(v: string): string {
  const decades = [4, 5, 6, 7, 8, 9, 10]
    .map((digits) => `WHEN ${v} < 1e${digits} THEN floor(${v} / 1e${digits - 3} + 0.5) * 1e${digits - 3}`)
    .join(' ')
  return `CASE WHEN ${v} < 1000 THEN floor(${v} + 0.5) ${decades} ELSE floor(${v} / 1e8 + 0.5) * 1e8 END`
}

/** The same rounding, for who checks the figures against the rows. */
export function latencyBucket(ms: number): number {
  if (ms < 1000) return Math.floor(ms + 0.5)
  const unit = 10 ** (Math.min(String(Math.floor(ms)).length, 11) - 3)
  return Math.floor(ms / unit + 0.5) * unit
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
