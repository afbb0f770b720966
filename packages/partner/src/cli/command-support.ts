import { CommandFailure, fail, positiveInteger, printJson } from '@earshot/support/cli'
import { type Command, Option } from 'commander'
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

export {
  CommandFailure,
  fail,
  jsonLine,
  positiveInteger,
  printJson,
  printLines,
  table,
} from '@earshot/support/cli'
