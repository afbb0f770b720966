import { type Command, InvalidArgumentError, Option } from 'commander'
import { EarshotClient } from '../client/earshot-client.js'
import { EarshotApiError, EarshotConfigError, EarshotError } from '../client/errors.js'

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080'

/** The credentials every command reads (set on the program, usable before or after the command). */
export interface CredentialOptions {
  baseUrl?: string
  enterpriseId?: number
  keyVersion?: number
  secret?: string
}

/** `--base-url --enterprise-id --key-version --secret`, each defaulting to its EARSHOT_* variable. */
export function credentialOptions(): Option[] {
  return [
    new Option('--base-url <url>', 'where the partner API listens')
      .env('EARSHOT_BASE_URL')
      .default(DEFAULT_BASE_URL),
    new Option('--enterprise-id <id>', 'your enterprise id')
      .env('EARSHOT_ENTERPRISE_ID')
      .argParser(positiveInteger('an enterprise id')),
    new Option('--key-version <n>', 'the keyVersion of your secret')
      .env('EARSHOT_KEY_VERSION')
      .default(1)
      .argParser(positiveInteger('a key version')),
    new Option(
      '--secret <secret>',
      'your shared secret (prefer EARSHOT_SECRET: command lines are visible to other users)',
    ).env('EARSHOT_SECRET'),
  ]
}

/** A client from the credential options; names every missing variable at once. */
export function clientFor(command: Command): EarshotClient {
  const { baseUrl, enterpriseId, keyVersion, secret } = command.optsWithGlobals<CredentialOptions>()
  const missing = [
    enterpriseId === undefined && ['EARSHOT_ENTERPRISE_ID', '--enterprise-id'],
    !secret && ['EARSHOT_SECRET', '--secret'],
  ].filter((each) => each !== false)
  if (missing.length > 0) {
    throw new CommandFailure(
      `missing credentials: set ${missing.map(([name]) => name).join(' and ')} ` +
        `(or pass ${missing.map(([, flag]) => flag).join(' and ')}), e.g. the enterpriseId and secret ` +
        '`earshot enterprise create` printed',
    )
  }
  try {
    return new EarshotClient({
      baseUrl: baseUrl || DEFAULT_BASE_URL,
      enterpriseId: enterpriseId as number,
      keyVersion: keyVersion ?? 1,
      secret: secret as string,
    })
  } catch (error) {
    if (!(error instanceof EarshotConfigError)) throw error
    throw new CommandFailure(`the credentials are not usable: ${error.message}`)
  }
}

/**
 * Runs a command with a client, turning refusals into `error <code>: <msg>` on stderr and exit code 1
 * (with --json also `{"error": {"code", "msg"}}` on stdout), and any other failure into its message.
 */
export async function runWithClient(
  command: Command,
  { json }: { json: boolean },
  body: (client: EarshotClient) => Promise<void>,
): Promise<void> {
  try {
    await body(clientFor(command))
  } catch (error) {
    if (error instanceof EarshotApiError) {
      if (json) printJson({ error: { code: error.code, msg: error.msg } })
      fail(`error ${error.code}: ${error.msg}`)
    } else if (error instanceof EarshotError || error instanceof CommandFailure) {
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

/** Prints one JSON value on one line, with `": "` and `", "` separators, as the platform CLI does. */
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

export function positiveInteger(what: string): (raw: string) => number {
  return (raw) => {
    if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) {
      throw new InvalidArgumentError(`${what} is a positive integer`)
    }
    return Number(raw)
  }
}
