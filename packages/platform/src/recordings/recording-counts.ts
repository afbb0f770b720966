import { parseInstantMicros } from '@earshot/protocol'
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
 *
 * The window is cut here, once per request, and the statement only sums the ranges it is given (at
 * 1,000,000 recordings its count runs in half the time of one that computed the cuts itself). Slots a
 * window does not need get NULL bounds, so the text depends on the filter's shape alone and PostgreSQL
 * keeps one generic plan for it.
 */

/**
 * The parts of a filter the total depends on: the enterprise and the device as parameter references
 * (`$1`), the window's bounds as the partner wrote them (validated instants).
 */
export interface CountedMatch {
  enterprise: string
  device?: string | undefined
  start?: string | undefined
  end?: string | undefined
}

/** Adds a statement parameter and answers its reference (`$3`). */
export type AddParam = (value: unknown) => string

type Unit = 'month' | 'day' | 'hour' | 'minute'

interface Level {
  table: string
  unit: Unit
}

const ENTERPRISE_LEVELS: readonly Level[] = [
  { table: 'recording_day_counts', unit: 'day' },
  { table: 'recording_hour_counts', unit: 'hour' },
  { table: 'recording_minute_counts', unit: 'minute' },
]
const DEVICE_LEVELS: readonly Level[] = [
  { table: 'recording_device_month_counts', unit: 'month' },
  { table: 'recording_device_day_counts', unit: 'day' },
]

/** A point of the window: epoch microseconds, and the text PostgreSQL is given for it. */
interface Point {
  micros: bigint
  text: string
}
type Range = readonly [Point, Point]

const FAR = 2n ** 80n
const BEFORE_ALL: Point = { micros: -FAR, text: '-infinity' }
const AFTER_ALL: Point = { micros: FAR, text: 'infinity' }

/**
 * A statement answering one row, `total` (int8): how many recordings match. Its parameters are added
 * through `param`; the same filter shape always gives the same text.
 */
export function countedTotalSql(match: CountedMatch, param: AddParam): string {
  const { enterprise, device } = match
  const levels = device === undefined ? ENTERPRISE_LEVELS : DEVICE_LEVELS
  const owner = (alias: string) =>
    `${alias}.enterprise_id = ${enterprise}` +
    (device === undefined ? '' : ` AND ${alias}.device_uid = ${device}`)
  const [first] = levels as [Level]
  if (match.start === undefined && match.end === undefined) {
    return `SELECT coalesce(sum(c.n), 0)::int8 AS total FROM ${first.table} c WHERE ${owner('c')}`
  }
  const { whole, edges } = cutWindow(levels, pointOf(match.start, BEFORE_ALL), pointOf(match.end, AFTER_ALL))
  // A slot without a range gets NULL bounds, which no row meets: the statement's shape stays fixed.
  const bounds = (range: Range | undefined) =>
    [param(range?.[0].text ?? null), param(range?.[1].text ?? null)].map((ref) => `${ref}::timestamptz`)
  const sums: string[] = []
  levels.forEach((level, i) => {
    for (let slot = 0; slot < slotsAt(i); slot++) {
      const [from, to] = bounds(whole[i]?.[slot])
      sums.push(
        `(SELECT coalesce(sum(c.n), 0) FROM ${level.table} c WHERE ${owner('c')} AND c.bucket >= ${from} AND c.bucket < ${to})`,
      )
    }
  })
  for (let slot = 0; slot < EDGE_SLOTS; slot++) {
    const [from, to] = bounds(edges[slot])
    sums.push(
      `(SELECT count(*) FROM recordings r WHERE ${owner('r')} AND r.recorded_at >= ${from} AND r.recorded_at < ${to})`,
    )
  }
  return `SELECT (${sums.join('\n + ')})::int8 AS total`
}

/**
 * Whole units of the first level make at most one range; what is left is a piece at each end of the
 * window, so every later level makes at most two, and two edges are left to count row by row.
 */
const slotsAt = (level: number) => (level === 0 ? 1 : 2)
const EDGE_SLOTS = 2

/**
 * Cuts [lo, hi) level by level: each span left over is cut into the whole units inside it and the
 * pieces on either side (empty ones dropped), which the next level cuts in turn.
 */
function cutWindow(levels: readonly Level[], lo: Point, hi: Point): { whole: Range[][]; edges: Range[] } {
  let spans: Range[] = [[lo, hi]]
  const whole: Range[][] = []
  levels.forEach((level, i) => {
    const cut: Range[] = []
    const left: Range[] = []
    for (const [from, to] of spans) {
      const wholeFrom = ceilTo(level.unit, from)
      const wholeTo = later(floorTo(level.unit, to), wholeFrom)
      if (wholeFrom.micros < wholeTo.micros) cut.push([wholeFrom, wholeTo])
      left.push([from, earlier(wholeFrom, to)], [wholeTo, to])
    }
    if (cut.length > slotsAt(i)) throw new Error(`window cut into ${cut.length} ranges of ${level.unit}s`)
    whole.push(cut)
    spans = left.filter(([from, to]) => from.micros < to.micros)
  })
  if (spans.length > EDGE_SLOTS) throw new Error(`window cut into ${spans.length} edges`)
  return { whole, edges: spans }
}

const earlier = (a: Point, b: Point) => (a.micros <= b.micros ? a : b)
const later = (a: Point, b: Point) => (a.micros >= b.micros ? a : b)

function pointOf(text: string | undefined, unbounded: Point): Point {
  if (text === undefined) return unbounded
  const micros = parseInstantMicros(text)
  if (micros === undefined) throw new RangeError(`not an instant: ${text}`)
  return { micros, text }
}

const MICROS: Record<Exclude<Unit, 'month'>, bigint> = {
  day: 86_400_000_000n,
  hour: 3_600_000_000n,
  minute: 60_000_000n,
}

/** The start of the UTC unit holding the point; an infinite point stays itself. */
function floorTo(unit: Unit, point: Point): Point {
  if (point.micros === -FAR || point.micros === FAR) return point
  if (unit !== 'month') {
    const size = MICROS[unit]
    const rest = ((point.micros % size) + size) % size
    return utcPoint(point.micros - rest)
  }
  const at = new Date(Number(floorDiv(point.micros, 1000n)))
  return utcPoint(monthStart(at.getUTCFullYear(), at.getUTCMonth()))
}

/** The start of the first UTC unit beginning at or after the point. */
function ceilTo(unit: Unit, point: Point): Point {
  const floor = floorTo(unit, point)
  if (floor.micros === point.micros) return floor
  if (unit !== 'month') return utcPoint(floor.micros + MICROS[unit])
  const at = new Date(Number(floor.micros / 1000n))
  return utcPoint(monthStart(at.getUTCFullYear(), at.getUTCMonth() + 1))
}

/** Epoch microseconds of the first instant of a UTC month (any year: Date.UTC would read 0–99 as 1900–1999). */
function monthStart(year: number, month: number): bigint {
  const at = new Date(0)
  at.setUTCFullYear(year, month, 1)
  return BigInt(at.getTime()) * 1000n
}

const floorDiv = (n: bigint, d: bigint) => (n % d < 0n ? n / d - 1n : n / d)
const two = (n: number) => String(n).padStart(2, '0')

/** A unit boundary (a whole minute) as PostgreSQL reads it, years before 1 AD written BC as it does. */
function utcPoint(micros: bigint): Point {
  const at = new Date(Number(micros / 1000n))
  const year = at.getUTCFullYear()
  const shown = String(year > 0 ? year : 1 - year).padStart(4, '0')
  const time = `${two(at.getUTCHours())}:${two(at.getUTCMinutes())}:${two(at.getUTCSeconds())}`
  const text = `${shown}-${two(at.getUTCMonth() + 1)}-${two(at.getUTCDate())}T${time}Z${year > 0 ? '' : ' BC'}`
  return { micros, text }
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
