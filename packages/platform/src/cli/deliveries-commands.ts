import { createInterface } from 'node:readline/promises'
import { shortEventType } from '@earshot/protocol'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { AdminClient, Delivery, DeliveryAttempt } from '../admin-client/admin-client.js'
import { DELIVERY_STATES } from '../deliveries/delivery-states.js'
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

interface ListOptions extends JsonFlag {
  enterprise?: number
  state?: string
  audioId?: string
  before?: number
  limit?: number
}

interface ReplayOptions extends JsonFlag {
  enterprise?: number
  from?: string
  to?: string
  unreceiptedSince?: string
  yes?: boolean
}

/** The platform's page size when --limit is not given. */
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

/** `earshot deliveries list|show|replay|cancel`: push deliveries and their attempts. */
export function deliveriesCommand(): Command {
  return reportUsageErrors(
    new Command('deliveries')
      .description(
        'list push deliveries with their attempts; replay failed, unconfirmed or queued ones; cancel one',
      )
      .addCommand(listCommand())
      .addCommand(showCommand())
      .addCommand(replayCommand())
      .addCommand(cancelCommand()),
  )
}

function cancelCommand(): Command {
  return new Command('cancel')
    .description(
      'cancel a delivery not yet confirmed: it is not pushed (again); one queued behind it goes once nothing ' +
        'before it is open',
    )
    .argument('<deliveryId>', 'the delivery to cancel', deliveryIdArgument)
    .option('--json', 'print {"cancelled": 1} as JSON')
    .action(async (deliveryId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        await client.cancelDelivery(deliveryId)
        if (options.json) return printJson({ cancelled: 1 })
        printLines(`Cancelled delivery ${deliveryId}.`)
      })
    })
}

function listCommand(): Command {
  return new Command('list')
    .description('list deliveries, newest first, with their attempts')
    .option('--enterprise <id>', 'only this enterprise', enterpriseIdArgument)
    .addOption(new Option('--state <state>', 'only deliveries in this state').choices(DELIVERY_STATES))
    .option('--audio-id <audioId>', 'only deliveries of this recording')
    .option(
      '--before <deliveryId>',
      'only deliveries older than this one (the next page)',
      deliveryIdArgument,
    )
    .option('--limit <n>', `at most this many (1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT})`, limitArgument)
    .option(
      '--json',
      'print [{"deliveryId", "audioId", "eventId", "eventType", "state", "attempts"}] as JSON',
    )
    .action(async (options: ListOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        await printDeliveries(client, options)
      })
    })
}

async function printDeliveries(client: AdminClient, options: ListOptions): Promise<void> {
  const found = await client.listDeliveries({
    enterpriseId: options.enterprise,
    state: options.state,
    audioId: options.audioId,
    before: options.before,
    limit: options.limit,
  })
  if (options.json) {
    return printJson(
      found.map(({ deliveryId, audioId, eventId, eventType, state, attempts }) => ({
        deliveryId,
        audioId,
        eventId,
        eventType,
        state,
        attempts,
      })),
    )
  }
  if (found.length === 0) return printLines('No deliveries match.')
  printLines(...deliveryTable(found))
  const last = found.at(-1) as Delivery
  if (found.length === (options.limit ?? DEFAULT_LIMIT)) {
    printLines(`Showing the newest ${found.length}; for older ones add --before ${last.deliveryId}.`)
  }
}

/** Deliveries as `deliveries list` shows them: a row each, with its attempts in a few words. */
export function deliveryTable(found: Delivery[]): string[] {
  const rows = found.map((delivery) => [
    String(delivery.deliveryId),
    String(delivery.enterpriseId),
    delivery.audioId,
    shortEventType(delivery.eventType),
    delivery.state,
    String(delivery.attempts.length),
    lastAttempt(delivery.attempts.at(-1)),
    delivery.nextAttemptAt ?? '-',
  ])
  return table(
    ['ID', 'ENTERPRISE', 'AUDIO ID', 'EVENT', 'STATE', 'ATTEMPTS', 'LAST ATTEMPT', 'NEXT ATTEMPT'],
    rows,
  )
}

function showCommand(): Command {
  return new Command('show')
    .description('show one delivery and its attempts')
    .argument('<deliveryId>', 'the delivery id', deliveryIdArgument)
    .option('--json', 'print the delivery with its attempts as JSON')
    .action(async (deliveryId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const delivery = await client.getDelivery(deliveryId)
        if (options.json) return printJson(delivery)
        printLines(...describeDelivery(delivery))
      })
    })
}

function replayCommand(): Command {
  return new Command('replay')
    .description(
      'put failed or unconfirmed deliveries back to pending (same eventId): one by its id (a queued one too, ' +
        'pushed ahead of the earlier events of its recording), or an ' +
        "enterprise's created from --from (inclusive) to --to (exclusive); with --unreceipted-since, " +
        'every delivery of the enterprise created since then that the partner never receipted (asks first)',
    )
    .argument('[deliveryId]', 'the delivery to replay', deliveryIdArgument)
    .option(
      '--enterprise <id>',
      "replay this enterprise's deliveries (with --from and --to)",
      enterpriseIdArgument,
    )
    .option(
      '--from <time>',
      'created at or after this ISO-8601 instant with an offset, e.g. 2026-01-01T00:00:00Z',
    )
    .option('--to <time>', 'created before this ISO-8601 instant with an offset')
    .option(
      '--unreceipted-since <time>',
      "push again the enterprise's deliveries created at or after this ISO-8601 instant that were never " +
        'receipted, acknowledged or not (acked, failed, unconfirmed); pending and in-flight ones are left alone',
    )
    .option('--yes', 'with --unreceipted-since: replay without asking')
    .option(
      '--json',
      'print {"replayed": N} as JSON; with --unreceipted-since {"enterpriseId", "since", "replayed", "alreadyScheduled"}',
    )
    .action(async (deliveryId: number | undefined, options: ReplayOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        await replay(client, deliveryId, options)
      })
    })
}

/** One delivery by its id, or an enterprise's in a time range (or its unreceipted ones: replayUnreceipted). */
async function replay(
  client: AdminClient,
  deliveryId: number | undefined,
  options: ReplayOptions,
): Promise<void> {
  if (options.unreceiptedSince !== undefined) {
    return replayUnreceipted(client, deliveryId, options)
  }
  if (options.yes) throw new CommandFailure('--yes goes with --unreceipted-since')
  const range = [
    ['--enterprise', options.enterprise],
    ['--from', options.from],
    ['--to', options.to],
  ] as const
  const given = range.filter(([, value]) => value !== undefined).map(([flag]) => flag)
  if (deliveryId !== undefined) {
    if (given.length > 0) {
      throw new CommandFailure(
        `give either a delivery id or --enterprise with --from and --to, not both (got ${given.join(', ')})`,
      )
    }
    const { delivery } = await client.replayDelivery(deliveryId)
    if (options.json) return printJson({ replayed: 1 })
    return printLines(
      `Replayed delivery ${deliveryId}: it is pending again and is pushed with the same eventId ` +
        `${delivery.eventId}.`,
    )
  }
  const missing = range.filter(([, value]) => value === undefined).map(([flag]) => flag)
  if (missing.length > 0) {
    throw new CommandFailure(
      `give a delivery id, or --enterprise ID --from TIME --to TIME (missing ${missing.join(', ')})`,
    )
  }
  const { enterprise, from, to } = options as Required<ReplayOptions>
  const { replayed } = await client.replayDeliveries(enterprise, from, to)
  if (options.json) return printJson({ replayed })
  printLines(
    replayed === 0
      ? `Enterprise ${enterprise} has no failed or unconfirmed deliveries created from ${from} to ${to}; nothing replayed.`
      : `Replayed ${replayed} failed or unconfirmed ${replayed === 1 ? 'delivery' : 'deliveries'} of enterprise ` +
          `${enterprise} created from ${from} to ${to}; they are pending again.`,
  )
}

/**
 * `replay --enterprise ID --unreceipted-since T`: says how many deliveries it would push again, asks on
 * a terminal (or takes --yes), then replays them. The question goes to stderr, so that stdout holds only
 * the answer (--json).
 */
async function replayUnreceipted(
  client: AdminClient,
  deliveryId: number | undefined,
  options: ReplayOptions,
): Promise<void> {
  const others = [
    ['a delivery id', deliveryId],
    ['--from', options.from],
    ['--to', options.to],
  ] as const
  const given = others.filter(([, value]) => value !== undefined).map(([name]) => name)
  if (given.length > 0) {
    throw new CommandFailure(`--unreceipted-since goes with --enterprise only (got ${given.join(', ')})`)
  }
  const { enterprise, unreceiptedSince: since } = options
  if (enterprise === undefined) throw new CommandFailure('--unreceipted-since needs --enterprise ID')
  const { replayable, alreadyScheduled } = await client.countUnreceipted(enterprise, since as string)
  const scheduled =
    alreadyScheduled === 0
      ? ''
      : ` (${alreadyScheduled} more ${alreadyScheduled === 1 ? 'is' : 'are'} pending or in flight already)`
  if (replayable === 0) {
    if (options.json) return printJson({ enterpriseId: enterprise, since, replayed: 0, alreadyScheduled })
    return printLines(
      `Enterprise ${enterprise} has no deliveries unreceipted since ${since} to replay${scheduled}; nothing replayed.`,
    )
  }
  const question = `Replay ${replayable} ${replayable === 1 ? 'delivery' : 'deliveries'} of enterprise ${enterprise} unreceipted since ${since}? [y/N] `
  if (!options.yes) {
    if (!process.stdin.isTTY) {
      throw new CommandFailure(
        `${replayable} ${replayable === 1 ? 'delivery' : 'deliveries'} of enterprise ${enterprise} would be ` +
          `replayed, but there is no terminal to confirm on: add --yes to replay them`,
      )
    }
    if (!(await confirm(question))) throw new CommandFailure('Nothing replayed.')
  }
  const result = await client.replayUnreceipted(enterprise, since as string)
  if (options.json) return printJson(result)
  printLines(
    `Replayed ${result.replayed} ${result.replayed === 1 ? 'delivery' : 'deliveries'} of enterprise ${enterprise} ` +
      `unreceipted since ${since}: pending again, due now, with the same eventIds${scheduled}.`,
  )
}

/** Asks a yes/no question on the terminal; only y or yes is a yes. */
async function confirm(question: string): Promise<boolean> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr })
  try {
    return /^y(es)?$/i.test((await terminal.question(question)).trim())
  } finally {
    terminal.close()
  }
}

/** Parses a delivery id argument: a positive integer. */
function deliveryIdArgument(raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) {
    throw new InvalidArgumentError('a delivery id is a positive integer')
  }
  return Number(raw)
}

function limitArgument(raw: string): number {
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LIMIT) {
    throw new InvalidArgumentError(`the limit is an integer from 1 to ${MAX_LIMIT}`)
  }
  return Number(raw)
}

/** The last attempt in a few words: its outcome, HTTP status, response code and error. */
function lastAttempt(attempt: DeliveryAttempt | undefined): string {
  if (!attempt) return '-'
  const details = [
    attempt.httpStatus !== null && `HTTP ${attempt.httpStatus}`,
    attempt.responseCode !== null && `code ${attempt.responseCode}`,
    attempt.error !== null && truncate(attempt.error, 60),
  ].filter(Boolean)
  return details.length > 0 ? `${attempt.outcome}: ${details.join(', ')}` : attempt.outcome
}

function truncate(text: string, length: number): string {
  const line = text.replace(/\s+/g, ' ')
  return line.length > length ? `${line.slice(0, length - 1)}…` : line
}

function describeDelivery(delivery: Delivery): string[] {
  const lines = [
    `Delivery ${delivery.deliveryId}: ${delivery.state}`,
    `  enterprise:    ${delivery.enterpriseId}`,
    `  audioId:       ${delivery.audioId}`,
    `  eventId:       ${delivery.eventId}`,
    `  eventType:     ${delivery.eventType}`,
    `  createdAt:     ${delivery.createdAt}`,
    `  nextAttemptAt: ${delivery.nextAttemptAt ?? '-'}`,
    `  ackedAt:       ${delivery.ackedAt ?? '-'}`,
    `  confirmedAt:   ${delivery.confirmedAt ?? '-'}`,
  ]
  if (delivery.attempts.length === 0) {
    lines.push('No attempts yet.')
  } else {
    lines.push(
      `Attempts (${delivery.attempts.length}):`,
      ...table(
        ['#', 'STARTED', 'DURATION', 'OUTCOME', 'HTTP', 'CODE', 'NEXT ATTEMPT', 'ERROR'],
        delivery.attempts.map((attempt) => [
          String(attempt.attemptNo),
          attempt.startedAt,
          `${attempt.durationMs} ms`,
          attempt.outcome,
          attempt.httpStatus === null ? '-' : String(attempt.httpStatus),
          attempt.responseCode === null ? '-' : String(attempt.responseCode),
          attempt.nextAttemptAt ?? '-',
          attempt.error === null ? '-' : truncate(attempt.error, 200),
        ]),
      ),
    )
  }
  if (delivery.state === 'failed' || delivery.state === 'unconfirmed') {
    lines.push(`Replay it with: earshot deliveries replay ${delivery.deliveryId}`)
  }
  return lines
}
