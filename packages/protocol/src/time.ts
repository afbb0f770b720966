/**
 * Instants are stored and compared at microseconds, the precision of PostgreSQL's timestamptz: a
 * seventh fractional digit would be rounded away by the database, so a bound written with one could
 * silently miss a recording that lies exactly on it. Such text is refused instead of rounded.
 */
export const MAX_FRACTION_DIGITS = 6

/** ISO-8601 date-time with an explicit offset or `Z`; seconds and fraction optional. */
export const ISO_INSTANT_PATTERN =
  '^(\\d{4})-(\\d{2})-(\\d{2})T(\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.\\d{1,6})?)?(?:Z|[+-](\\d{2}):(\\d{2}))$'

const isoInstant = new RegExp(ISO_INSTANT_PATTERN)

export const ISO_INSTANT_RULE =
  'must be an ISO-8601 date-time with an explicit offset or Z and at most 6 fractional digits ' +
  '(microseconds), e.g. 2026-11-01T08:00:00.123456+08:00'

/**
 * Parses an ISO-8601 date-time that carries an explicit offset and returns epoch microseconds, exact
 * (a bigint: epoch microseconds pass 2^53 in year 2255), or undefined when the text is not of that
 * form, has more than 6 fractional digits, or names a date that does not exist (Feb 30th, 24:00).
 * Date.parse alone is not enough: it rolls impossible days over into the next month and drops every
 * digit after the milliseconds. Year 0000 and offsets beyond ±15:59 are refused too: no clock uses
 * them, and PostgreSQL cannot store them.
 */
export function parseInstantMicros(text: string): bigint | undefined {
  const match = isoInstant.exec(text)
  if (!match) return undefined
  const [y, mo, d, h, mi, s, offsetHour, offsetMinute] = match
    .slice(1)
    .map((part) => Number(part ?? 0)) as Tuple8
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59) return undefined
  if (y < 1 || offsetHour > 15 || offsetMinute > 59) return undefined
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? ''
  const wholeSeconds = Date.parse(fraction ? text.replace(`.${fraction}`, '') : text)
  return BigInt(wholeSeconds) * 1000n + BigInt(fraction.padEnd(MAX_FRACTION_DIGITS, '0'))
}

/**
 * As parseInstantMicros, in epoch milliseconds (rounded down) for a JavaScript Date. Compare
 * instants with parseInstantMicros: two instants apart by less than a millisecond are equal here.
 */
export function parseInstant(text: string): number | undefined {
  const micros = parseInstantMicros(text)
  return micros === undefined ? undefined : Number(floorDiv(micros, 1000n))
}

function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d
  return n % d < 0n ? q - 1n : q
}

type Tuple8 = [number, number, number, number, number, number, number, number]

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}
