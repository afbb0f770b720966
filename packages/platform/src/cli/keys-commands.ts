import { positiveInteger } from '@earshot/support/cli'
import { Command, InvalidArgumentError } from 'commander'
import type { Role } from '../access/roles.js'
import type { ApiKey, NewApiKey } from '../admin-client/admin-client.js'
import { enterprisesOption, type JsonFlag, roleOption, scopeCell, scopeText } from './access-options.js'
import { printJson, printLines, reportUsageErrors, runClient, table } from './client-command.js'

interface CreateOptions extends JsonFlag {
  name: string
  role: Role
  enterprise?: number[]
  expires?: string
}

const KEY_WARNING =
  'The key is shown only this once: store it now (the platform keeps only its hash, and cannot show it again).'

/** `earshot keys create|list|revoke`: API keys for the CLI and scripts (an owner's). */
export function keysCommand(): Command {
  return reportUsageErrors(
    new Command('keys')
      .description(
        'create, list and revoke API keys (esk_…): what the CLI (EARSHOT_API_KEY) and scripts present',
      )
      .addCommand(createCommand())
      .addCommand(listCommand())
      .addCommand(revokeCommand()),
  )
}

function createCommand(): Command {
  return new Command('create')
    .description('create an API key with a role, limited to some enterprises or not, expiring or not')
    .requiredOption('--name <name>', 'what the key is for, as lists and the audit trail name it')
    .addOption(roleOption('what the key may do').makeOptionMandatory())
    .addOption(enterprisesOption('limit the key to this enterprise; without it, every enterprise'))
    .option('--expires <duration>', 'stop working after this long: Nd (days) or Nh (hours)', expiresArgument)
    .option('--json', 'print {"keyId", "key", "role", "enterprises", "expiresAt"} as JSON')
    .action(async (options: CreateOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const request: NewApiKey = {
          name: options.name,
          role: options.role,
          ...(options.enterprise && { enterprises: options.enterprise }),
          ...(options.expires !== undefined && { expires: options.expires }),
        }
        const created = await client.createKey(request)
        if (options.json) return printJson(created)
        printLines(
          `Created API key ${created.keyId} (${JSON.stringify(options.name)}): role ${created.role}, ` +
            `${scopeText(created.enterprises)}, ${created.expiresAt === null ? 'never expires' : `expires ${created.expiresAt}`}.`,
          `  key: ${created.key}`,
          KEY_WARNING,
          'The CLI sends it from EARSHOT_API_KEY: export EARSHOT_API_KEY=<the key>',
        )
      })
    })
}

function listCommand(): Command {
  return new Command('list')
    .description('list API keys (never the keys themselves) with their role, scope and last use')
    .option('--json', 'print the keys as a JSON array (keyId, name, role, enterprises, …, lastUsedAt)')
    .action(async (options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const keys = await client.listKeys()
        if (options.json) return printJson(keys)
        if (keys.length === 0) {
          return printLines('No API keys yet. Create one with: earshot keys create --name NAME --role ROLE')
        }
        printLines(
          ...table(
            ['ID', 'NAME', 'ROLE', 'ENTERPRISES', 'STATE', 'LAST USED', 'EXPIRES', 'CREATED BY'],
            keys.map((key) => [
              String(key.keyId),
              key.name,
              key.role,
              scopeCell(key.enterprises),
              stateOf(key),
              key.lastUsedAt ?? 'never',
              key.expiresAt ?? 'never',
              key.createdBy,
            ]),
          ),
        )
      })
    })
}

function revokeCommand(): Command {
  return new Command('revoke')
    .description('revoke an API key: refused (4010) from its next request on, on every instance')
    .argument('<keyId>', 'the key, as `earshot keys list` shows it', positiveInteger('a key id'))
    .option('--json', 'print the key as it is now as JSON, with revokedAt')
    .action(async (keyId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const revoked = await client.revokeKey(keyId)
        if (options.json) return printJson(revoked)
        printLines(
          `Revoked API key ${revoked.keyId} (${JSON.stringify(revoked.name)}) at ${revoked.revokedAt}: ` +
            'it is refused from its next request on.',
        )
      })
    })
}

/** A key's state now: active, revoked or expired. */
function stateOf(key: ApiKey, now = Date.now()): string {
  if (key.revokedAt !== null) return 'revoked'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now) return 'expired'
  return 'active'
}

function expiresArgument(raw: string): string {
  if (!/^[1-9][0-9]{0,4}[dh]$/.test(raw)) {
    throw new InvalidArgumentError('give a number of days or hours, like 90d or 12h')
  }
  return raw
}
