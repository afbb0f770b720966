import { PushEventType } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'
import { emptyCounts, type LevelCounts, latencyBucketSql } from './level-counts.js'

/*
 * The service levels' rollup: an enterprise's complete hours (by delivery creation) counted once and kept in
 * delivery_level_hours, recounted when a delivery of that hour is attempted or confirmed. Which hours that
 * is, is found from the attempts and confirmations since the enterprise was last looked at (less a margin
 * for rows committed after the time they carry); past REBUILD_AFTER_MS of nobody looking, every hour is
 * recounted instead.
 */

export const HOUR_MS = 3600_000
/** Past this long without a look, the whole window is recounted rather than searched for changes. */
const REBUILD_AFTER_MS = 10 * 60_000
/**
 * An hour counted longer ago than this is counted again, a few at each look, whatever was found: what the
 * search for changes cannot see (a row committed later than the margin allows, deliveries pruned) lasts
 * about that long at most.
 */
const RECOUNT_AFTER_MS = 60 * 60_000
const RECOUNTS_PER_LOOK = 4

/** The start of the hour of an instant (SQL), in epoch milliseconds, whatever the session's time zone. */
const HOUR_OF = (instant: string) => `(floor(extract(epoch FROM ${instant}) / 3600) * ${HOUR_MS})::float8`

const COUNT_SQL = `WITH d AS (
       SELECT (extract(epoch FROM first_attempt_at - created_at) * 1000)::float8 AS first_ms, first_attempt_acked,
              CASE WHEN state = 'confirmed' AND acked_at IS NOT NULL AND event_type <> '${PushEventType.DELETED}'
                   THEN greatest(0, extract(epoch FROM confirmed_at - acked_at) * 1000)::float8 END AS receipt_ms
         FROM deliveries
        WHERE enterprise_id = $1 AND created_at >= to_timestamp($2::float8 / 1000)
          AND created_at < to_timestamp($3::float8 / 1000))
     SELECT 'first' AS metric, ${latencyBucketSql('first_ms')} AS ms, count(*)::int AS n,
            count(*) FILTER (WHERE first_attempt_acked)::int AS acked
       FROM d WHERE first_ms IS NOT NULL GROUP BY 2
     UNION ALL
     SELECT 'receipt', ${latencyBucketSql('receipt_ms')}, count(*)::int, 0 FROM d WHERE receipt_ms IS NOT NULL GROUP BY 2`

/**
 * A statement counts at most this long a span of deliveries: on the embedded database each statement holds
 * the one connection, and a partner's request waits behind at most one of them.
 */
const CHUNK_MS = 10 * 60_000

/** Counts the enterprise's deliveries created in [fromMs, toMs) as they are now, CHUNK_MS at a time. */
export async function countSpan(
  db: Queryable,
  enterpriseId: number,
  fromMs: number,
  toMs: number,
): Promise<LevelCounts> {
  const counts = emptyCounts()
  for (let from = fromMs; from < toMs; from += CHUNK_MS) {
    const rows = await db.query<{ metric: 'first' | 'receipt'; ms: number; n: number; acked: number }>(
      COUNT_SQL,
      [enterpriseId, from, Math.min(from + CHUNK_MS, toMs)],
    )
    for (const { metric, ms, n, acked } of rows) {
      const byMs = metric === 'first' ? counts.firstMs : counts.receiptMs
      byMs[String(ms)] = (byMs[String(ms)] ?? 0) + n
      counts.firstAcked += acked
    }
  }
  return counts
}

/** An hour's counts, and when they were taken. */
export interface CountedHour {
  counts: LevelCounts
  countedAt: number
}

/** An enterprise's counted hours as an instance holds them, and up to when it looked for changes. */
export interface Rollup {
  checkedAt: number
  hours: Map<number, CountedHour>
}

/**
 * The enterprise's complete hours starting in [fromMs, toMs) (hour-aligned), each brought up to date:
 * hours counted before something of theirs changed, or never counted, are counted again (and stored for the
 * other instances). `held` is what this instance counted at its last look; without it, the hours stored are
 * read, as of the last look any instance took.
 */
export async function completeHours(
  db: Queryable,
  enterpriseId: number,
  span: { fromMs: number; toMs: number; nowMs: number; marginMs: number },
  held?: Rollup,
): Promise<Rollup> {
  const { fromMs, toMs, nowMs, marginMs } = span
  const fresh = held && nowMs - held.checkedAt <= REBUILD_AFTER_MS ? held : undefined
  const hours = fresh?.hours ?? (await storedHours(db, enterpriseId, fromMs))
  const checkedAt = fresh?.checkedAt ?? (await sharedCheck(db, enterpriseId))
  const changed =
    checkedAt !== undefined && nowMs - checkedAt <= REBUILD_AFTER_MS
      ? await changedHours(db, enterpriseId, checkedAt - marginMs, fromMs)
      : undefined
  for (const hour of hours.keys()) if (hour < fromMs) hours.delete(hour)
  const due = changed && new Set([...changed, ...oldestCounted(hours, nowMs)])
  for (let hour = fromMs; hour < toMs; hour += HOUR_MS) {
    if (due && hours.has(hour) && !due.has(hour)) continue
    const counts = await countSpan(db, enterpriseId, hour, hour + HOUR_MS)
    await saveHour(db, enterpriseId, hour, counts, nowMs)
    hours.set(hour, { counts, countedAt: nowMs })
  }
  await db.query(
    `INSERT INTO delivery_level_checks (enterprise_id, checked_at) VALUES ($1, to_timestamp($2::float8 / 1000))
     ON CONFLICT (enterprise_id) DO UPDATE SET checked_at = greatest(delivery_level_checks.checked_at, excluded.checked_at)`,
    [enterpriseId, nowMs],
  )
  await db.query(
    'DELETE FROM delivery_level_hours WHERE enterprise_id = $1 AND hour_start < to_timestamp($2::float8 / 1000)',
    [enterpriseId, fromMs],
  )
  return { checkedAt: nowMs, hours }
}

/** The hours counted longest ago, past RECOUNT_AFTER_MS: a few, to be counted again. */
function oldestCounted(hours: Map<number, CountedHour>, nowMs: number): number[] {
  return [...hours]
    .filter(([, hour]) => nowMs - hour.countedAt > RECOUNT_AFTER_MS)
    .sort(([, a], [, b]) => a.countedAt - b.countedAt)
    .slice(0, RECOUNTS_PER_LOOK)
    .map(([start]) => start)
}

async function storedHours(db: Queryable, enterpriseId: number, fromMs: number) {
  const rows = await db.query<{ hour: number; countedAt: number } & LevelCounts>(
    `SELECT (extract(epoch FROM hour_start) * 1000)::float8 AS hour, first_ms AS "firstMs",
            first_acked AS "firstAcked", receipt_ms AS "receiptMs",
            (extract(epoch FROM counted_at) * 1000)::float8 AS "countedAt"
       FROM delivery_level_hours WHERE enterprise_id = $1 AND hour_start >= to_timestamp($2::float8 / 1000)`,
    [enterpriseId, fromMs],
  )
  const parse = (value: unknown) =>
    (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, number>
  return new Map<number, CountedHour>(
    rows.map((row) => [
      Number(row.hour),
      {
        counts: { firstMs: parse(row.firstMs), firstAcked: row.firstAcked, receiptMs: parse(row.receiptMs) },
        countedAt: Number(row.countedAt),
      },
    ]),
  )
}

async function sharedCheck(db: Queryable, enterpriseId: number): Promise<number | undefined> {
  const [check] = await db.query<{ checkedAt: number }>(
    `SELECT (extract(epoch FROM checked_at) * 1000)::float8 AS "checkedAt" FROM delivery_level_checks
      WHERE enterprise_id = $1`,
    [enterpriseId],
  )
  return check?.checkedAt
}

/** The hours (by creation, from fromMs) of the enterprise's deliveries attempted or confirmed since sinceMs. */
async function changedHours(
  db: Queryable,
  enterpriseId: number,
  sinceMs: number,
  fromMs: number,
): Promise<Set<number>> {
  // Two index-led halves: the attempts by their start, the confirmations by their time.
  const rows = await db.query<{ hour: number }>(
    `SELECT ${HOUR_OF('d.created_at')} AS hour
       FROM deliveries d
       JOIN (SELECT DISTINCT delivery_id FROM delivery_attempts
              WHERE started_at >= to_timestamp($2::float8 / 1000)) a ON a.delivery_id = d.delivery_id
      WHERE d.enterprise_id = $1 AND d.created_at >= to_timestamp($3::float8 / 1000)
     UNION
     SELECT ${HOUR_OF('d.created_at')} FROM deliveries d
      WHERE d.state = 'confirmed' AND d.confirmed_at >= to_timestamp($2::float8 / 1000)
        AND d.enterprise_id = $1 AND d.created_at >= to_timestamp($3::float8 / 1000)`,
    [enterpriseId, sinceMs, fromMs],
  )
  return new Set(rows.map((row) => Number(row.hour)))
}

async function saveHour(
  db: Queryable,
  enterpriseId: number,
  hourMs: number,
  counts: LevelCounts,
  nowMs: number,
) {
  await db.query(
    `INSERT INTO delivery_level_hours (enterprise_id, hour_start, first_ms, first_acked, receipt_ms, counted_at)
     VALUES ($1, to_timestamp($2::float8 / 1000), $3, $4, $5, to_timestamp($6::float8 / 1000))
     ON CONFLICT (enterprise_id, hour_start) DO UPDATE
       SET first_ms = excluded.first_ms, first_acked = excluded.first_acked, receipt_ms = excluded.receipt_ms,
           counted_at = excluded.counted_at`,
    [
      enterpriseId,
      hourMs,
      JSON.stringify(counts.firstMs),
      counts.firstAcked,
      JSON.stringify(counts.receiptMs),
      nowMs,
    ],
  )
}
