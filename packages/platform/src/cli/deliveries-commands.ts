import { Command, InvalidArgumentError, Option } from 'commander'
import { DELIVERY_STATES } from '../push/delivery-store.js'
import type { Delivery, DeliveryAttempt } from './admin-client.js'
import {
  CommandFailure,
  enterpriseIdArgument,
  printJson,
  printLines,
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
}

/** The platform's page size when --limit is not given. */
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

/** `earshot deliveries list|show|replay`: push deliveries and their attempts (DESIGN.md §6, §7). */
export function deliveriesCommand(): Command {
  const deliveries = new Command('deliveries').description(
    'list push deliveries with their attempts; replay failed or unconfirmed ones',
  )

  deliveries
    .command('list')
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
        printLines(
          ...table(
            ['ID', 'ENTERPRISE', 'AUDIO ID', 'EVENT', 'STATE', 'ATTEMPTS', 'LAST ATTEMPT', 'NEXT ATTEMPT'],
            rows,
          ),
        )
        const last = found.at(-1) as Delivery
        if (found.length === (options.limit ?? DEFAULT_LIMIT)) {
          printLines(`Showing the newest ${found.length}; for older ones add --before ${last.deliveryId}.`)
        }
      })
    })

  deliveries
    .command('show')
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

  deliveries
    .command('replay')
    .description(
      'put failed or unconfirmed deliveries back to pending (same eventId): one by its id, or an ' +
        "enterprise's created from --from (inclusive) to --to (exclusive)",
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
    .option('--json', 'print {"replayed": N} as JSON')
    .action(async (deliveryId: number | undefined, options: ReplayOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
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
      })
    })

  return deliveries
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

function shortEventType(eventType: string): string {
  return eventType.replace(/^recording\./, '')
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
