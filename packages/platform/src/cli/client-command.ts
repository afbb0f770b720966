import { type Command, InvalidArgumentError } from 'commander'
import { AdminApiError, AdminClient, AdminConnectionError, DEFAULT_ADMIN_URL } from './admin-client.js'

/** Options every client command accepts (set on the program, usable before or after the command). */
export interface ClientGlobals {
  url?: string
  adminToken?: string
}

export interface RunOptions {
  json: boolean
  /** Whether a refusal with --json also prints {"error": {code, msg}} on stdout (default true). */
  jsonErrorOnStdout?: boolean
}

/**
 * Runs a client command: builds the admin client from --url / --admin-token (or EARSHOT_URL /
 * EARSHOT_ADMIN_TOKEN), turns refusals into `error <code>: <msg>` on stderr and exit code 1.
 */
export async function runClient(
  command: Command,
  { json, jsonErrorOnStdout = true }: RunOptions,
  body: (client: AdminClient) => Promise<void>,
): Promise<void> {
  const globals = command.optsWithGlobals<ClientGlobals>()
  const url = globals.url || DEFAULT_ADMIN_URL
  const token = globals.adminToken
  if (!token) {
    fail(
      'no admin token: set EARSHOT_ADMIN_TOKEN to the admin token `earshot serve` printed ' +
        '(export EARSHOT_ADMIN_TOKEN=...), or pass --admin-token',
    )
    return
  }
  try {
    await body(new AdminClient(url, token))
  } catch (error) {
    if (error instanceof AdminApiError) {
      if (json && jsonErrorOnStdout) printJson({ error: { code: error.code, msg: error.msg } })
      fail(`error ${error.code}: ${error.msg}`)
    } else if (error instanceof AdminConnectionError || error instanceof CommandFailure) {
      fail(error.message)
    } else {
      throw error
    }
  }
}

/** A failure the command reports itself: its message goes to stderr, the exit code is 1. */
export class CommandFailure extends Error {}

export function fail(message: string): void {
  process.stderr.write(`${message}\n`)
  process.exitCode = 1
}

/** Prints one JSON value on one line, with `": "` and `", "` separators (the form DESIGN.md §7 shows). */
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

/** Parses an enterprise id argument: a positive integer. */
export function enterpriseIdArgument(raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) {
    throw new InvalidArgumentError('an enterprise id is a positive integer')
  }
  return Number(raw)
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
