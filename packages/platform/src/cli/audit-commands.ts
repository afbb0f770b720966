import { once } from 'node:events'
import { fail, positiveInteger } from '@earshot/support/cli'
import { Command, InvalidArgumentError } from 'commander'
import type { AuditQuery, AuditRow } from '../admin-client/admin-client.js'
import type { JsonFlag } from './access-options.js'
import {
  enterpriseIdArgument,
  printJson,
  printLines,
  reportUsageErrors,
  runClient,
  table,
} from './client-command.js'

interface ListOptions extends JsonFlag {
  actor?: string
  enterprise?: number
  since?: string
  limit?: number
  before?: number
}

/** The platform's page size when --limit is not given. */
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

/** `earshot audit list|verify|export`: the hash-chained trail of every change, sign-in and refusal. */
export function auditCommand(): Command {
  return reportUsageErrors(
    new Command('audit')
      .description(
        'read the audit trail (who changed what, when, from where), verify its hash chain, export it',
      )
      .addCommand(listCommand())
      .addCommand(verifyCommand())
      .addCommand(exportCommand()),
  )
}

function listCommand(): Command {
  return new Command('list')
    .description('list audit rows, newest first, filtered by actor, enterprise and time')
    .option('--actor <id>', "only this actor's rows: operator:3, key:7, break-glass")
    .option('--enterprise <id>', 'only rows about this enterprise', enterpriseIdArgument)
    .option(
      '--since <time>',
      'only rows at or after this ISO-8601 time, or this long ago (30m, 24h, 7d)',
      sinceArgument,
    )
    .option('--limit <n>', `at most this many (1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT})`, limitArgument)
    .option('--before <seq>', 'only rows before this seq (the next page)', positiveInteger('a seq'))
    .option(
      '--json',
      'print [{"seq", "at", "actor", "operation", "target", "before", "after", "address", "outcome"}] as JSON',
    )
    .action(async (options: ListOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const query: AuditQuery = {
          ...(options.actor !== undefined && { actor: options.actor }),
          ...(options.enterprise !== undefined && { enterprise: String(options.enterprise) }),
          ...(options.since !== undefined && { since: options.since }),
          ...(options.limit !== undefined && { limit: String(options.limit) }),
          ...(options.before !== undefined && { before: String(options.before) }),
        }
        const rows = await client.listAudit(query)
        if (options.json) return printJson(rows.map(listed))
        printRows(rows, options.limit ?? DEFAULT_LIMIT)
      })
    })
}

/** A row as `audit list --json` prints it: without the chain's hashes and the user agent. */
function listed({ seq, at, actor, operation, target, before, after, address, outcome }: AuditRow) {
  return { seq, at, actor, operation, target, before, after, address, outcome }
}

function printRows(rows: AuditRow[], limit: number): void {
  if (rows.length === 0) {
    printLines('No audit rows match.')
    return
  }
  printLines(
    ...table(
      ['SEQ', 'AT', 'ACTOR', 'OPERATION', 'TARGET', 'FIELDS', 'OUTCOME', 'ADDRESS'],
      rows.map((row) => [
        String(row.seq),
        row.at,
        row.actor.name === row.actor.id ? row.actor.id : `${row.actor.name} (${row.actor.id})`,
        row.operation,
        Object.entries(row.target)
          .map(([name, id]) => `${name}=${id}`)
          .join(' ') || '-',
        Object.keys(row.after ?? {}).join(',') || '-',
        row.outcome,
        row.address ?? '-',
      ]),
    ),
  )
  if (rows.length === limit) {
    printLines(
      `Showing the newest ${rows.length}; for older ones add --before ${(rows.at(-1) as AuditRow).seq}.`,
    )
  }
}

function verifyCommand(): Command {
  return new Command('verify')
    .description(
      "check the audit trail's hash chain from its anchor: a row changed or removed in the database is found " +
        '(exit 1)',
    )
    .option('--json', 'print {"ok", "checked", "firstBad"} as JSON')
    .action(async (options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const verification = await client.verifyAudit()
        if (options.json) printJson(verification)
        if (verification.ok) {
          if (!options.json) printLines(`The audit trail holds: ${rows(verification.checked)} checked.`)
          return
        }
        fail(
          `the audit trail's hash chain breaks at seq ${verification.firstBad}: that row was changed, or a row ` +
            `removed, outside Earshot (${rows(verification.checked)} before it hold). ` +
            'Compare with an earlier `earshot audit export` to see what changed.',
        )
      })
    })
}

function exportCommand(): Command {
  return new Command('export')
    .description('print every audit row, oldest first, as JSON Lines (one row per line), as it streams')
    .action(async (_options: unknown, command: Command) => {
      // A reader that stops early (`| head`) ends the export, quietly.
      process.stdout.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPIPE') process.exit(0)
        throw error
      })
      await runClient(command, { json: false }, async (client) => {
        for await (const row of client.exportAudit()) {
          if (!process.stdout.write(`${JSON.stringify(row)}\n`)) await once(process.stdout, 'drain')
        }
      })
    })
}

const rows = (count: number) => `${count} ${count === 1 ? 'row' : 'rows'}`

/** --since: an ISO-8601 time as given, or a duration back from now (30m, 24h, 7d) as the time it names. */
function sinceArgument(raw: string): string {
  const ago = /^([1-9][0-9]{0,5})([mhd])$/.exec(raw)
  if (ago) {
    const minutes = { m: 1, h: 60, d: 1440 }[ago[2] as 'm' | 'h' | 'd'] * Number(ago[1])
    return new Date(Date.now() - minutes * 60_000).toISOString()
  }
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(Date.parse(raw))) {
    throw new InvalidArgumentError(
      'give an ISO-8601 time (2026-11-02T08:00:00Z) or a duration ago (30m, 24h, 7d)',
    )
  }
  return raw
}

function limitArgument(raw: string): number {
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LIMIT) {
    throw new InvalidArgumentError(`the limit is from 1 to ${MAX_LIMIT}`)
  }
  return Number(raw)
}
