import type { Queryable } from '../storage/database.js'

/**
 * The exact number of an enterprise's recordings in a time window, read from the counters migration 5
 * keeps (sql/000005.sql and later) rather than counted row by row: the window [start, end) is cut into
 * whole UTC days, summed from the day counters; what is left at its edges (less than a day on each
 * side) into whole UTC hours, summed from the hour counters; what is left of those into whole UTC
 * minutes (migration 9); and what is left of those (less than a minute on each side) is counted in
 * recordings_by_time. For one device: whole months from its month counters (migration 7), then whole
 * days, the edges counted in recordings_by_device. So the cost grows with the window's length in days
 * (for one device, months) and with the recordings of a minute (for one device, of a day), never with
 * the number of matches.
 */

/** SQL expressions (parameter references) of a filter's parts; start and end are timestamptz. */
export interface CountedMatch {
  enterprise: string
  device?: string | undefined
  start?: string | undefined
  end?: string | undefined
}

interface Level {
  table: string
  unit: 'month' | 'day' | 'hour' | 'minute'
  /** The start of the unit after the one starting at `start`, computed in UTC (`+ interval '1 day'` would follow the session's time zone). */
  next: (start: string) => string
}

const DAYS: Level = {
  table: 'recording_day_counts',
  unit: 'day',
  next: (start) => `${start} + interval '24 hours'`,
}
const HOURS: Level = {
  table: 'recording_hour_counts',
  unit: 'hour',
  next: (start) => `${start} + interval '1 hour'`,
}
const MINUTES: Level = {
  table: 'recording_minute_counts',
  unit: 'minute',
  next: (start) => `${start} + interval '1 minute'`,
}
const DEVICE_MONTHS: Level = {
  table: 'recording_device_month_counts',
  unit: 'month',
  next: (start) => `((${start}) AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC'`,
}
const DEVICE_DAYS: Level = { ...DAYS, table: 'recording_device_day_counts' }

/**
 * The sum of `perRow` (a correlated subquery on `k`) over the rows of `table`: correlated, each runs as a
 * range scan of its index with that row's bounds, whatever the planner thinks of the bounds' spread.
 */
const sumOver = (table: string, perRow: string) => `(SELECT coalesce(sum((${perRow})), 0) FROM ${table} k)`

/** A statement answering one row, `total` (int8): how many recordings match. */
export function countedTotalSql(match: CountedMatch): string {
  const levels = match.device === undefined ? [DAYS, HOURS, MINUTES] : [DEVICE_MONTHS, DEVICE_DAYS]
  const owner = (alias: string) =>
    `${alias}.enterprise_id = ${match.enterprise}` +
    (match.device === undefined ? '' : ` AND ${alias}.device_uid = ${match.device}`)
  const [first] = levels as [Level]
  if (match.start === undefined && match.end === undefined) {
    return `SELECT coalesce(sum(c.n), 0)::int8 AS total FROM ${first.table} c WHERE ${owner('c')}`
  }

  // spans0 is the window; level i cuts each span of spans{i-1} into the whole units inside it (cut{i})
  // and the two spans left over on either side (spans{i}), empty when lo >= hi. Unbounded sides are
  // infinite, and stay so through utc_floor and the interval arithmetic.
  const ctes = [
    `spans0 (lo, hi) AS (SELECT ${match.start ?? "'-infinity'::timestamptz"}, ${match.end ?? "'infinity'::timestamptz"})`,
  ]
  const sums: string[] = []
  levels.forEach((level, index) => {
    const i = index + 1
    ctes.push(
      `cut${i} AS (SELECT s.lo, s.hi, w.lo AS whole_lo, greatest(w.hi, w.lo) AS whole_hi
                     FROM spans${i - 1} s,
                          LATERAL (SELECT ${level.next(`utc_floor('${level.unit}', s.lo - interval '1 microsecond')`)},
                                          utc_floor('${level.unit}', s.hi)) AS w (lo, hi))`,
      `spans${i} (lo, hi) AS (SELECT lo, least(whole_lo, hi) FROM cut${i} UNION ALL SELECT whole_hi, hi FROM cut${i})`,
    )
    sums.push(
      sumOver(
        `cut${i}`,
        `SELECT sum(c.n) FROM ${level.table} c
          WHERE ${owner('c')} AND c.bucket >= k.whole_lo AND c.bucket < k.whole_hi`,
      ),
    )
  })
  sums.push(
    sumOver(
      `spans${levels.length}`,
      `SELECT count(*) FROM recordings r WHERE ${owner('r')} AND r.recorded_at >= k.lo AND r.recorded_at < k.hi`,
    ),
  )
  return `WITH ${ctes.join(',\n')}\nSELECT (${sums.join('\n + ')})::int8 AS total`
}

/**
 * Takes, in the counters' one order, the row locks of every counter the recordings will add to (the
 * trigger then finds them held): for a transaction that inserts in more than one statement, whose
 * triggers would otherwise lock counters in an order another transaction might cross.
 */
export async function lockRecordingCounters(
  tx: Queryable,
  enterpriseId: number,
  recordings: readonly { deviceUid: string; recordedAt: string }[],
): Promise<void> {
  await tx.query(
    `SELECT count_recordings(array_fill($1::int8, ARRAY[cardinality($2::text[])]), $2::text[],
                             $3::timestamptz[], 0)`,
    [enterpriseId, recordings.map((r) => r.deviceUid), recordings.map((r) => r.recordedAt)],
  )
}
