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
  adminToken?: string
}

export interface RunOptions {
  /** With --json, a failure is also printed on stdout as {"error": {"code", "msg"}}. */
  json: boolean
}

/** What a missing admin token is told (no request is sent). */
export const NO_ADMIN_TOKEN =
  'no admin token: set EARSHOT_ADMIN_TOKEN to the admin token `earshot serve` printed ' +
  '(export EARSHOT_ADMIN_TOKEN=...), or pass --admin-token'

/** What a token the admin API refused (4010) is told instead of the API's message. */
export const ADMIN_TOKEN_REFUSED =
  'the admin token was refused: check EARSHOT_ADMIN_TOKEN (or --admin-token) is the token ' +
  '`earshot serve` printed or was started with'

/**
 * A command's failure as --json prints it: `code` is the platform's catalogue code (a number) when the
 * platform refused the call, else a string saying what failed here: ERR_EARSHOT_CONFIG (no admin token),
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
 * Runs a client command: builds the admin client from --url / --admin-token (or EARSHOT_URL /
 * EARSHOT_ADMIN_TOKEN) and reports any failure (report()). A token the platform refuses is told to
 * check EARSHOT_ADMIN_TOKEN, which reads differently from a missing one.
 */
export async function runClient(
  command: Command,
  options: RunOptions,
  body: (client: AdminClient) => Promise<void>,
): Promise<void> {
  const globals = command.optsWithGlobals<ClientGlobals>()
  const url = globals.url || DEFAULT_ADMIN_URL
  const token = globals.adminToken
  if (!token) return report({ code: 'ERR_EARSHOT_CONFIG', msg: NO_ADMIN_TOKEN }, options)
  try {
    await body(new AdminClient(url, token))
  } catch (error) {
    if (error instanceof AdminApiError) {
      const msg = error.code === ResponseCode.UNAUTHORIZED ? ADMIN_TOKEN_REFUSED : error.msg
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

export { CommandFailure, fail, jsonLine, printLines, reportUsageErrors, table } from '@earshot/support/cli'

/** Parses an enterprise id argument: a positive integer. */
export const enterpriseIdArgument = positiveInteger('an enterprise id')
