import { Command, InvalidArgumentError } from 'commander'
import type { Enterprise, EnterpriseChanges } from '../admin-client/admin-client.js'
import {
  CommandFailure,
  enterpriseIdArgument,
  printJson,
  printLines,
  reportUsageErrors,
  runClient,
  table,
} from './client-command.js'

interface JsonFlag {
  json?: boolean
}

const SECRET_WARNING = 'The secret is shown only this once: store it now (the platform cannot show it again).'

/** `earshot enterprise create|list|update|disable|rotate-key|set-push-url`. */
export function enterpriseCommand(): Command {
  return reportUsageErrors(
    new Command('enterprise')
      .description('create, list, update and disable enterprises; rotate keys; set push URLs')
      .addCommand(createCommand())
      .addCommand(listCommand())
      .addCommand(updateCommand())
      .addCommand(disableCommand())
      .addCommand(rotateKeyCommand())
      .addCommand(setPushUrlCommand()),
  )
}

function createCommand(): Command {
  return new Command('create')
    .description('create an enterprise and print its credentials (enterpriseId, keyVersion, secret)')
    .requiredOption('--name <name>', 'the enterprise name')
    .option('--push-url <url>', 'where recordings are pushed (http:// or https://)')
    .option('--json', 'print {"enterpriseId", "keyVersion", "secret"} as JSON')
    .action(async (options: JsonFlag & { name: string; pushUrl?: string }, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const { enterpriseId, keyVersion, secret } = await client.createEnterprise(
          options.name,
          options.pushUrl,
        )
        if (options.json) return printJson({ enterpriseId, keyVersion, secret })
        printLines(
          `Created enterprise ${enterpriseId} (${JSON.stringify(options.name)}).`,
          `  enterpriseId: ${enterpriseId}`,
          `  keyVersion:   ${keyVersion}`,
          `  secret:       ${secret}`,
          SECRET_WARNING,
        )
      })
    })
}

function listCommand(): Command {
  return new Command('list')
    .description('list enterprises with their status, current keyVersion and push URL')
    .option('--json', 'print the enterprises as a JSON array')
    .action(async (options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const enterprises = await client.listEnterprises()
        if (options.json) return printJson(enterprises)
        if (enterprises.length === 0) {
          return printLines('No enterprises yet. Create one with: earshot enterprise create --name NAME')
        }
        const rows = enterprises.map((each) => [
          String(each.enterpriseId),
          each.name,
          each.disabled ? 'disabled' : 'active',
          String(currentKeyVersion(each) ?? '-'),
          each.requireIssuedAt ? 'required' : 'optional',
          each.pushUrl ?? '-',
        ])
        printLines(...table(['ID', 'NAME', 'STATUS', 'KEY', 'ISSUED AT', 'PUSH URL'], rows))
      })
    })
}

interface UpdateOptions extends JsonFlag {
  requireIssuedAt?: boolean
  retentionDays?: number
}

function updateCommand(): Command {
  return new Command('update')
    .description("change an enterprise's settings; what is not given stays as it is")
    .argument('<enterpriseId>', 'the enterprise id', enterpriseIdArgument)
    .option(
      '--require-issued-at <true|false>',
      'true: refuse its sealed requests (the token request too) without issuedAt, with 4001',
      booleanArgument,
    )
    .option(
      '--retention-days <days>',
      'erase its recordings this many days after they were recorded (pushed as deleted to every endpoint); 0 removes the policy',
      retentionDaysArgument,
    )
    .option('--json', 'print the enterprise as it is now as JSON')
    .action(async (enterpriseId: number, options: UpdateOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const changes: EnterpriseChanges = {
          ...(options.requireIssuedAt !== undefined && { requireIssuedAt: options.requireIssuedAt }),
          ...(options.retentionDays !== undefined && { retentionDays: options.retentionDays }),
        }
        if (Object.keys(changes).length === 0) {
          throw new CommandFailure(
            'nothing to change: give --require-issued-at true|false or --retention-days N (0 removes the policy)',
          )
        }
        const updated = await client.updateEnterprise(enterpriseId, changes)
        if (options.json) return printJson(updated)
        printLines(...updateLines(updated, changes))
      })
    })
}

/** What an update says: a line for each setting it changed. */
function updateLines(updated: Enterprise, changes: EnterpriseChanges): string[] {
  const id = updated.enterpriseId
  const lines: string[] = []
  if (changes.requireIssuedAt !== undefined) {
    lines.push(
      updated.requireIssuedAt
        ? `Enterprise ${id} requires issuedAt: its sealed requests without it are refused (4001).`
        : `Enterprise ${id} accepts sealed requests without issuedAt.`,
    )
  }
  if (changes.retentionDays !== undefined) {
    lines.push(
      updated.retentionDays === null
        ? `Enterprise ${id} has no retention policy: its recordings are kept until deleted.`
        : `Enterprise ${id} erases its recordings ${updated.retentionDays} days after they were recorded.`,
    )
  }
  return lines
}

/** --retention-days: a whole number of days, 0 for none (the platform refuses one out of its range). */
function retentionDaysArgument(raw: string): number {
  if (!/^\d{1,9}$/.test(raw))
    throw new InvalidArgumentError('give a whole number of days (0 removes the policy)')
  return Number(raw)
}

function booleanArgument(raw: string): boolean {
  if (raw === 'true' || raw === 'false') return raw === 'true'
  throw new InvalidArgumentError('give true or false')
}

function disableCommand(): Command {
  return new Command('disable')
    .description('disable an enterprise: its tokens stop working at once')
    .argument('<enterpriseId>', 'the enterprise id', enterpriseIdArgument)
    .option('--json', 'print {"enterpriseId", "disabled"} as JSON')
    .action(async (enterpriseId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const result = await client.disableEnterprise(enterpriseId)
        if (options.json) return printJson(result)
        printLines(`Enterprise ${result.enterpriseId} is disabled; its tokens no longer work.`)
      })
    })
}

function rotateKeyCommand(): Command {
  return new Command('rotate-key')
    .description('issue the next keyVersion; the previous one stays valid for the grace period')
    .argument('<enterpriseId>', 'the enterprise id', enterpriseIdArgument)
    .option('--json', 'print the new credentials and when the previous key retires as JSON')
    .action(async (enterpriseId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const rotated = await client.rotateKey(enterpriseId)
        if (options.json) return printJson(rotated)
        printLines(
          `Enterprise ${rotated.enterpriseId} has a new key.`,
          `  keyVersion: ${rotated.keyVersion}`,
          `  secret:     ${rotated.secret}`,
          `keyVersion ${rotated.previousKeyVersion} stays valid until ${rotated.previousKeyRetiresAt}.`,
          SECRET_WARNING,
        )
      })
    })
}

function setPushUrlCommand(): Command {
  return new Command('set-push-url')
    .description('set where recordings are pushed, or --clear to stop pushing')
    .argument('<enterpriseId>', 'the enterprise id', enterpriseIdArgument)
    .argument('[url]', 'the push URL (http:// or https://)')
    .option('--clear', 'remove the push URL')
    .option('--json', 'print {"enterpriseId", "pushUrl", "cancelled"} as JSON')
    .action(
      async (
        enterpriseId: number,
        url: string | undefined,
        options: JsonFlag & { clear?: boolean },
        command: Command,
      ) => {
        await runClient(command, { json: Boolean(options.json) }, async (client) => {
          if ((url === undefined) === !options.clear) {
            throw new CommandFailure('give either a push URL or --clear (not both)')
          }
          const result = await client.setPushUrl(enterpriseId, options.clear ? null : (url as string))
          if (options.json) return printJson(result)
          printLines(
            result.pushUrl === null
              ? `Enterprise ${result.enterpriseId} has no push URL now; recordings are not pushed.`
              : `Enterprise ${result.enterpriseId} pushes recordings to ${result.pushUrl}.`,
            ...(result.cancelled === 0
              ? []
              : [
                  `${result.cancelled} ${result.cancelled === 1 ? 'delivery' : 'deliveries'} to its removed endpoints, not yet confirmed, cancelled.`,
                ]),
          )
        })
      },
    )
}

function currentKeyVersion(enterprise: Enterprise): number | undefined {
  const current = enterprise.keys.filter((key) => key.retiresAt === null)
  const keys = current.length > 0 ? current : enterprise.keys
  return keys.reduce<number | undefined>((max, key) => Math.max(max ?? 0, key.keyVersion), undefined)
}
