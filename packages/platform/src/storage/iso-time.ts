/** Renders a timestamptz as ISO-8601 UTC text on both backends. */
export function isoTime(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
}
