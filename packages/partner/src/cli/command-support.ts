import { fail, positiveInteger, printJson as print } from '@earshot/support/cli'
import { type Command, Option } from 'commander'
import { DEFAULT_BASE_URL, DEFAULT_KEY_VERSION } from '../client/credentials-from-env.js'
import { EarshotClient } from '../client/earshot-client.js'
import { EarshotConfigError } from '../client/errors.js'
import { CredentialsFailure, failureLine, failureOf } from './failures.js'

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
      .default(DEFAULT_KEY_VERSION)
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
    throw new CredentialsFailure(
      `missing credentials: set ${missing.map(([name]) => name).join(' and ')} ` +
        `(or pass ${missing.map(([, flag]) => flag).join(' and ')}), e.g. the enterpriseId and secret ` +
        '`earshot enterprise create` printed',
    )
  }
  try {
    return new EarshotClient({
      baseUrl: baseUrl || DEFAULT_BASE_URL,
      enterpriseId: enterpriseId as number,
      keyVersion: keyVersion ?? DEFAULT_KEY_VERSION,
      secret: secret as string,
    })
  } catch (error) {
    if (!(error instanceof EarshotConfigError)) throw error
    throw new CredentialsFailure(`the credentials are not usable: ${error.message}`)
  }
}

/** Whether the command printed its answer on stdout. */
let answered = false

/** Prints a command's answer as one JSON line (and notes it: see runWithClient()). */
export function printJson(value: unknown): void {
  answered = true
  print(value)
}

/**
 * Runs a command with a client, turning refusals into `error <code>: <msg>` on stderr and exit code 1,
 * and any other failure (file system errors included) into one line, never a stack; with --json every
 * failure is also printed on stdout as `{"error": {"code", "msg"}}` (the convention of the platform's
 * `earshot` CLI too), unless the command
 * printed its answer there already (sync --audio's counts, then exit 1 for the audio it could not
 * fetch): stdout holds one JSON value, the answer or the error.
 */
export async function runWithClient(
  command: Command,
  { json }: { json: boolean },
  body: (client: EarshotClient) => Promise<void>,
): Promise<void> {
  try {
    await body(clientFor(command))
  } catch (error) {
    reportFailure(error, { json })
  }
}

/** Prints any failure as the CLI's convention says (see runWithClient()) and sets exit code 1. */
export function reportFailure(error: unknown, { json }: { json: boolean }): void {
  const failure = failureOf(error)
  if (json && !answered) printJson({ error: failure })
  fail(failureLine(failure))
}

export {
  CommandFailure,
  fail,
  jsonLine,
  positiveInteger,
  printLines,
  progressBar,
  table,
} from '@earshot/support/cli'

export { CredentialsFailure, FileFailure, makeFolderFor } from './failures.js'
