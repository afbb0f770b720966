/** ISO-8601 date-time with an explicit offset or `Z` (DESIGN.md §4); seconds and fraction optional. */
export const ISO_INSTANT_PATTERN =
  '^(\\d{4})-(\\d{2})-(\\d{2})T(\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.\\d{1,9})?)?(?:Z|[+-](\\d{2}):(\\d{2}))$'

const isoInstant = new RegExp(ISO_INSTANT_PATTERN)

export const ISO_INSTANT_RULE =
  'must be an ISO-8601 date-time with an explicit offset or Z, e.g. 2026-11-01T08:00:00+08:00'

/**
 * Parses an ISO-8601 date-time that carries an explicit offset and returns epoch milliseconds, or
 * undefined when the text is not of that form or names a date that does not exist (Feb 30th, 24:00).
 * Date.parse alone is not enough: it rolls impossible days over into the next month. Year 0000 and
 * offsets beyond ±15:59 are refused too: no clock uses them, and PostgreSQL cannot store them.
 */
export function parseInstant(text: string): number | undefined {
  const match = isoInstant.exec(text)
  if (!match) return undefined
  const [y, mo, d, h, mi, s, offsetHour, offsetMinute] = match
    .slice(1)
    .map((part) => Number(part ?? 0)) as Tuple8
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59) return undefined
  if (y < 1 || offsetHour > 15 || offsetMinute > 59) return undefined
  return Date.parse(text)
}

type Tuple8 = [number, number, number, number, number, number, number, number]

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}
