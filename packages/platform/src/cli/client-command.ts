import { CommandFailure, fail, positiveInteger, printJson } from '@earshot/support/cli'
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

export { CommandFailure, fail, jsonLine, printJson, printLines, table } from '@earshot/support/cli'

/** Parses an enterprise id argument: a positive integer. */
export const enterpriseIdArgument = positiveInteger('an enterprise id')
