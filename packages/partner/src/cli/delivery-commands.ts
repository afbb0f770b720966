import { DELIVERY_STATES, LEVEL_WINDOWS, REPLAY_STATES } from '@earshot/protocol'
import { Command, InvalidArgumentError, Option } from 'commander'
import type {
  DeliveriesRequest,
  Delivery,
  DeliveryAttempt,
  LevelsWindow,
  ReplayableState,
  ServiceLevels,
} from '../client/integration-types.js'
import {
  CommandFailure,
  positiveInteger,
  printJson,
  printLines,
  runWithClient,
  table,
} from './command-support.js'
import { eventTypeArgument, shortEventType } from './event-types.js'

type DeliveriesOptions = DeliveriesRequest & { json?: boolean }

interface ReplayOptions {
  delivery?: number
  since?: string
  states?: ReplayableState[]
  json?: boolean
}

const MAX_ANSWER_WIDTH = 40

/** `earshot-partner deliveries [filters] [--size] [--cursor]`: a page of your deliveries. */
export function deliveriesCommand(): Command {
  return new Command('deliveries')
    .description('list your push deliveries, newest first, with their attempts: one page')
    .addOption(new Option('--state <state>', 'only deliveries in this state').choices(DELIVERY_STATES))
    .option('--event-type <type>', 'only this event type (e.g. transcript_ready)', eventTypeArgument)
    .option('--audio-id <audioId>', 'only deliveries of this recording')
    .option('--since <time>', 'created at or after this ISO-8601 instant, e.g. 2026-01-01T00:00:00Z')
    .option('--until <time>', 'created before this ISO-8601 instant')
    .option('--size <n>', 'deliveries per page, 1 to 100 (default 20)', positiveInteger('a page size'))
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--json', 'print {"items", "nextCursor", "hasMore"} as JSON, every attempt with its answer')
    .action(async (options: DeliveriesOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const { json: _, ...request } = options
        const page = await client.listDeliveries(request)
        if (options.json) return printJson(page)
        if (page.items.length === 0) return printLines('No deliveries match.')
        printLines(...deliveryTable(page.items))
        if (page.hasMore && page.nextCursor !== null) {
          printLines(`More: add --cursor ${page.nextCursor} (with the same filters) for the next page.`)
        }
      })
    })
}

function deliveryTable(deliveries: Delivery[]): string[] {
  const rows = deliveries.map((delivery) => [
    String(delivery.deliveryId),
    String(delivery.endpointId),
    delivery.audioId,
    shortEventType(delivery.eventType),
    delivery.state,
    delivery.createdAt,
    String(delivery.attempts.length),
    describeAttempt(delivery.attempts.at(-1)),
  ])
  return table(
    ['ID', 'ENDPOINT', 'AUDIO ID', 'EVENT', 'STATE', 'CREATED AT', 'ATTEMPTS', 'LAST ATTEMPT'],
    rows,
  )
}

/** `HTTP 500 in 12 ms: {"code":5000}`, `no answer after 10000 ms`, or `-` before any attempt. */
function describeAttempt(attempt: DeliveryAttempt | undefined): string {
  if (!attempt) return '-'
  const took = attempt.durationMs === null ? '' : ` in ${attempt.durationMs} ms`
  if (attempt.httpStatus === null) return `no answer${took}`
  const answer = (attempt.answer ?? '').replace(/\s+/g, ' ').trim()
  const shown = answer.length > MAX_ANSWER_WIDTH ? `${answer.slice(0, MAX_ANSWER_WIDTH - 1)}…` : answer
  return `HTTP ${attempt.httpStatus}${took}${shown ? `: ${shown}` : ''}`
}

/** `earshot-partner replay (--delivery ID | --since T [--states failed,unconfirmed])`. */
export function replayCommand(): Command {
  return new Command('replay')
    .description(
      'push deliveries again (same eventId): one by its id, or every one created since a time that ' +
        'failed or was never confirmed',
    )
    .option('--delivery <id>', 'the delivery to push again', positiveInteger('a delivery id'))
    .option('--since <time>', 'every delivery created at or after this ISO-8601 instant, in --states')
    .option(
      '--states <states>',
      'with --since: the states to replay, comma-separated (default failed,unconfirmed)',
      statesArgument,
    )
    .option('--json', 'print {"replayed": N} as JSON')
    .action(async (options: ReplayOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const { delivery, since, states } = options
        if ((delivery === undefined) === (since === undefined)) {
          throw new CommandFailure('give either --delivery ID or --since TIME')
        }
        if (delivery !== undefined && states) throw new CommandFailure('--states goes with --since')
        const { replayed } =
          delivery === undefined
            ? await client.replaySince({ since: since as string, states })
            : await client.replayDelivery(delivery)
        if (options.json) return printJson({ replayed })
        printLines(`Replayed ${replayed} ${replayed === 1 ? 'delivery' : 'deliveries'}.`)
      })
    })
}

function statesArgument(raw: string): ReplayableState[] {
  const states = raw.split(',').map((state) => state.trim())
  const unknown = states.filter((state) => !(REPLAY_STATES as readonly string[]).includes(state))
  if (unknown.length > 0 || states.length === 0) {
    throw new InvalidArgumentError(`the states to replay are failed, unconfirmed or both, comma-separated`)
  }
  return [...new Set(states as ReplayableState[])]
}

/** `earshot-partner levels [--window 24h|7d]`: your delivery service levels. */
export function levelsCommand(): Command {
  return new Command('levels')
    .description(
      'your delivery service levels: first-attempt latency, acknowledged at first, ack to receipt, backlog',
    )
    .addOption(
      new Option('--window <window>', 'over the last 24 hours or 7 days')
        .choices(LEVEL_WINDOWS)
        .default('24h'),
    )
    .option(
      '--json',
      'print {"firstAttemptP50Ms", "firstAttemptP95Ms", "firstAttemptAckShare", "ackToReceiptP95Ms", "backlog"} as JSON',
    )
    .action(async (options: { window: LevelsWindow; json?: boolean }, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const levels = await client.levels(options.window)
        if (options.json) return printJson(levels)
        printLines(`Service levels over the last ${options.window}:`, ...describeLevels(levels))
      })
    })
}

function describeLevels(levels: ServiceLevels): string[] {
  const ms = (value: number | null) => (value === null ? '- (no data)' : `${Math.round(value)} ms`)
  const share = levels.firstAttemptAckShare
  return [
    `  first attempt, p50:              ${ms(levels.firstAttemptP50Ms)}`,
    `  first attempt, p95:              ${ms(levels.firstAttemptP95Ms)}`,
    `  acknowledged at first attempt:   ${share === null ? '- (no data)' : `${(share * 100).toFixed(1)} %`}`,
    `  acknowledgement to receipt, p95: ${ms(levels.ackToReceiptP95Ms)}`,
    `  backlog now:                     ${levels.backlog}`,
  ]
}
