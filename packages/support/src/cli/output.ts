import { InvalidArgumentError } from 'commander'

/** A failure the command reports itself: its message goes to stderr, the exit code is 1. */
export class CommandFailure extends Error {}

export function fail(message: string): void {
  process.stderr.write(`${message}\n`)
  process.exitCode = 1
}

/** Prints one JSON value on one line, with `": "` and `", "` separators (the platform's documented form). */
export function printJson(value: unknown): void {
  process.stdout.write(`${jsonLine(value)}\n`)
}

export function jsonLine(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jsonLine).join(', ')}]`
  if (typeof value === 'object' && value !== null) {
    const fields = Object.entries(value).filter(([, field]) => field !== undefined)
    return `{${fields.map(([key, field]) => `${JSON.stringify(key)}: ${jsonLine(field)}`).join(', ')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

export function printLines(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`)
}

/** Renders rows as left-aligned columns under a header. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)]
}

/** A commander argument parser for positive integers; `what` names the value in the refusal. */
export function positiveInteger(what: string): (raw: string) => number {
  return (raw) => {
    if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) {
      throw new InvalidArgumentError(`${what} is a positive integer`)
    }
    return Number(raw)
  }
}
