import { ResponseCode } from '@earshot/protocol'
import { CommandFailure, fail, positiveInteger, printJson as print } from '@earshot/support/cli'
import type { Command } from 'commander'
import {
  AdminApiError,
  AdminClient,
  AdminConnectionError,
  DEFAULT_ADMIN_URL,
} from '../admin-client/admin-client.js'

/** Options every client command accepts (set on the program, usable before or after the command). */
export interface ClientGlobals {
  url?: string
  apiKey?: string
  adminToken?: string
}

export interface RunOptions {
  /** With --json, a failure is also printed on stdout as {"error": {"code", "msg"}}. */
  json: boolean
}

/** What a command without a credential is told (no request is sent). */
export const NO_CREDENTIAL =
  'no credential: set EARSHOT_API_KEY to an API key (export EARSHOT_API_KEY=esk_...; an owner creates one ' +
  "in the console's Keys screen or with `earshot keys create`), or pass --api-key; on the platform's host, " +
  'the break-glass EARSHOT_ADMIN_TOKEN (or --admin-token) works too'

/** What an API key the admin API refused (4010) is told instead of the API's message. */
export const API_KEY_REFUSED =
  'the API key was refused: it is unknown, revoked or expired. Check EARSHOT_API_KEY (or --api-key) is the ' +
  'whole key (esk_...) as it was shown when created, and that `earshot keys list` shows it neither revoked ' +
  'nor expired; else ask an owner for a new key'

/** What a break-glass token the admin API refused (4010) is told instead of the API's message. */
export const ADMIN_TOKEN_REFUSED =
  'the admin token was refused: check EARSHOT_ADMIN_TOKEN (or --admin-token) is the break-glass token ' +
  '`earshot serve` was started with (it is off unless EARSHOT_ADMIN_TOKEN is set there), or use an API key ' +
  '(EARSHOT_API_KEY)'

/** The credential a client command sends: --api-key / EARSHOT_API_KEY, else the break-glass token. */
export function credentialOf(globals: ClientGlobals): { value: string; refused: string } | undefined {
  if (globals.apiKey) return { value: globals.apiKey, refused: API_KEY_REFUSED }
  if (globals.adminToken) return { value: globals.adminToken, refused: ADMIN_TOKEN_REFUSED }
  return undefined
}

/**
 * A command's failure as --json prints it: `code` is the platform's catalogue code (a number) when the
 * platform refused the call, else a string saying what failed here: ERR_EARSHOT_CONFIG (no credential),
 * ERR_EARSHOT_CONNECTION (the admin API could not be reached, or what answered is not it),
 * ERR_EARSHOT_COMMAND (the command itself: a file, an option), ERR_EARSHOT_USAGE (the command line).
 */
export interface CommandError {
  code: number | string
  msg: string
}

/** Whether the command printed its answer on stdout. */
let answered = false

/** Prints a command's answer as one JSON line (and notes it: see report()). */
export function printJson(value: unknown): void {
  answered = true
  print(value)
}

/**
 * Reports a failure: `error <code>: <msg>` on stderr for a refusal, the message alone for anything
 * else, exit code 1; with --json also {"error": {"code", "msg"}} on stdout (one line), unless the
 * command printed its answer there already: stdout holds one JSON value, the answer or the error.
 */
export function report(error: CommandError, { json }: RunOptions): void {
  if (json && !answered) printJson({ error: { code: error.code, msg: error.msg } })
  fail(typeof error.code === 'number' ? `error ${error.code}: ${error.msg}` : error.msg)
}

/**
 * Runs a client command: builds the admin client from --url and the credential (credentialOf) and reports
 * any failure (report()). A credential the platform refuses is told what to check, which reads
 * differently from a missing one; a role without the permission is told the platform's 4031, which names
 * the role and the permission.
 */
export async function runClient(
  command: Command,
  options: RunOptions,
  body: (client: AdminClient) => Promise<void>,
): Promise<void> {
  const globals = command.optsWithGlobals<ClientGlobals>()
  const url = globals.url || DEFAULT_ADMIN_URL
  const credential = credentialOf(globals)
  if (!credential) return report({ code: 'ERR_EARSHOT_CONFIG', msg: NO_CREDENTIAL }, options)
  try {
    await body(new AdminClient(url, credential.value))
  } catch (error) {
    if (error instanceof AdminApiError) {
      const msg = error.code === ResponseCode.UNAUTHORIZED ? credential.refused : error.msg
      report({ code: error.code, msg }, options)
    } else if (error instanceof AdminConnectionError) {
      report({ code: 'ERR_EARSHOT_CONNECTION', msg: error.message }, options)
    } else if (error instanceof CommandFailure) {
      report({ code: 'ERR_EARSHOT_COMMAND', msg: error.message }, options)
    } else {
      throw error
    }
  }
}

export {
  CommandFailure,
  fail,
  jsonLine,
  printLines,
  progressBar,
  reportUsageErrors,
  table,
} from '@earshot/support/cli'

/** Parses an enterprise id argument: a positive integer. */
export const enterpriseIdArgument = positiveInteger('an enterprise id')
