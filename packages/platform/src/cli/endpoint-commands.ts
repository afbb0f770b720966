import {
  EVENT_TYPES,
  eventTypeNamed,
  type PushEventTypeValue,
  ResponseCode,
  shortEventType,
} from '@earshot/protocol'
import { positiveInteger } from '@earshot/support/cli'
import { Command, InvalidArgumentError, Option } from 'commander'
import {
  AdminApiError,
  type AdminClient,
  type Endpoint,
  type EndpointChanges,
  type EndpointDetail,
} from '../admin-client/admin-client.js'
import {
  CommandFailure,
  enterpriseIdArgument,
  printJson,
  printLines,
  reportUsageErrors,
  runClient,
  table,
} from './client-command.js'
import { deliveryTable } from './deliveries-commands.js'
import { deliveries, describeTrouble, pushUrlsCommand } from './push-url-commands.js'
import { receiverCheckCommand } from './receiver-check-command.js'

interface JsonFlag {
  json?: boolean
}

interface EnterpriseFlag extends JsonFlag {
  enterprise?: number
}

interface AddOptions extends JsonFlag {
  enterprise: number
  events?: PushEventTypeValue[]
  description?: string
  maxPerSecond?: number
  disabled?: boolean
}

interface UpdateOptions extends EnterpriseFlag {
  newUrl?: string
  events?: PushEventTypeValue[]
  description?: string
  maxPerSecond?: number | 'none'
  enable?: boolean
  disable?: boolean
  discardHeld?: boolean
}

/** `earshot endpoints add|list|show|update|remove|check|urls|enable`: push endpoints and their URLs' health. */
export function endpointsCommand(): Command {
  const endpoints = new Command('endpoints')
    .description(
      "manage enterprises' push endpoints (up to 10 each: a URL, the event types pushed to it, a rate); " +
        'show the health of push URLs and enable a disabled one again',
    )
    .addCommand(addCommand())
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addCommand(updateCommand())
    .addCommand(removeCommand())
    .addCommand(receiverCheckCommand())
  for (const command of pushUrlsCommand()) endpoints.addCommand(command)
  return reportUsageErrors(endpoints)
}

function addCommand(): Command {
  return new Command('add')
    .description('add a push endpoint to an enterprise (by default: every event type, enabled, no rate)')
    .argument('<url>', 'where to push: an absolute http(s) URL')
    .requiredOption('--enterprise <id>', 'the enterprise', enterpriseIdArgument)
    .addOption(eventsOption())
    .addOption(descriptionOption())
    .option('--max-per-second <n>', 'push at most this many deliveries a second', maxPerSecondArgument)
    .option('--disabled', 'add it disabled: no deliveries are made for it until it is enabled')
    .option('--json', 'print the endpoint as JSON')
    .action(async (url: string, options: AddOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const added = await client.addEndpoint(options.enterprise, {
          url,
          ...(options.events && { eventTypes: options.events }),
          ...(options.description !== undefined && { description: options.description }),
          ...(options.maxPerSecond !== undefined && { maxPerSecond: options.maxPerSecond }),
          ...(options.disabled && { enabled: false }),
        })
        if (options.json) return printJson(added)
        printLines(`Added ${summary(added)}.`)
      })
    })
}

function listCommand(): Command {
  return new Command('list')
    .description("list push endpoints (every enterprise's, or one's) with their URL's health")
    .option('--enterprise <id>', 'only this enterprise', enterpriseIdArgument)
    .option('--json', 'print the endpoints as a JSON array')
    .action(async (options: EnterpriseFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const { enterprise } = options
        const found =
          enterprise === undefined
            ? await client.listEndpoints()
            : await client.listEnterpriseEndpoints(enterprise)
        if (options.json) return printJson(found)
        if (found.length === 0) {
          return printLines(
            enterprise === undefined
              ? 'No endpoints: no enterprise has one.'
              : `Enterprise ${enterprise} has no endpoints; add one with: earshot endpoints add URL --enterprise ${enterprise}`,
          )
        }
        printLines(...endpointTable(found), ...endpointTrouble(found))
      })
    })
}

function endpointTable(found: Endpoint[]): string[] {
  const rows = found.map((endpoint) => [
    String(endpoint.endpointId),
    String(endpoint.enterpriseId),
    endpoint.url,
    endpoint.eventTypes.map(shortEventType).join(','),
    endpoint.enabled ? 'enabled' : 'disabled',
    endpoint.health.state,
    endpoint.maxPerSecond === null ? '-' : `${endpoint.maxPerSecond}/s`,
    String(endpoint.waiting),
  ])
  return table(['ID', 'ENTERPRISE', 'URL', 'EVENTS', 'STATE', 'HEALTH', 'RATE', 'WAITING'], rows)
}

/** Why each troubled URL among the endpoints' is so (once per URL), and which endpoints an operator disabled. */
function endpointTrouble(found: Endpoint[]): string[] {
  const troubled = new Map<string, Endpoint['health']>()
  for (const { url, health } of found) if (health.reason !== null) troubled.set(url, health)
  return [
    ...[...troubled].flatMap(([url, { state, reason }]) => describeTrouble({ url, state, reason })),
    ...found
      .filter((endpoint) => !endpoint.enabled)
      .map(
        ({ endpointId }) =>
          `Endpoint ${endpointId} is disabled: its deliveries, and those of new events, wait. To enable it: earshot endpoints update ${endpointId} --enable (--discard-held to cancel them instead)`,
      ),
  ]
}

function showCommand(): Command {
  return endpointCommand('show', 'show a push endpoint with its recent deliveries and their attempts')
    .option('--json', 'print {"endpoint", "recentDeliveries"} as JSON (each delivery with its attempts)')
    .action(async (endpointId: number, options: EnterpriseFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const enterpriseId = await enterpriseOf(client, endpointId, options.enterprise)
        const detail = await client.showEndpoint(enterpriseId, endpointId)
        if (options.json) return printJson(detail)
        printLines(...describeEndpoint(detail))
      })
    })
}

function describeEndpoint({ endpoint, recentDeliveries }: EndpointDetail): string[] {
  const lines = [
    `Endpoint ${endpoint.endpointId} of enterprise ${endpoint.enterpriseId}: ` +
      `${endpoint.enabled ? 'enabled' : 'disabled'}, its URL ${endpoint.health.state}`,
    `  url:           ${endpoint.url}`,
    `  events:        ${endpoint.eventTypes.map(shortEventType).join(', ')}`,
    `  description:   ${endpoint.description || '-'}`,
    `  rate:          ${rate(endpoint.maxPerSecond)}`,
    `  waiting:       ${endpoint.waiting}`,
    `  createdAt:     ${endpoint.createdAt}`,
    `  lastSuccessAt: ${endpoint.health.lastSuccessAt ?? '-'}`,
    `  lastFailureAt: ${endpoint.health.lastFailureAt ?? '-'}`,
    ...endpointTrouble([endpoint]),
  ]
  if (recentDeliveries.length === 0) return [...lines, 'No deliveries yet.']
  return [
    ...lines,
    `Recent deliveries (${recentDeliveries.length}, newest first):`,
    ...deliveryTable(recentDeliveries),
    'Every attempt of one: earshot deliveries show DELIVERY_ID',
  ]
}

function updateCommand(): Command {
  return endpointCommand('update', 'change a push endpoint; what is not given stays as it is')
    .option('--new-url <url>', 'push to this URL instead (its open deliveries go there)')
    .addOption(eventsOption())
    .addOption(descriptionOption())
    .option(
      '--max-per-second <n>',
      'push at most this many deliveries a second; none for no limit',
      maxPerSecondOrNone,
    )
    .addOption(new Option('--enable', 'enable it: the deliveries it held resume').conflicts('disable'))
    .addOption(new Option('--disable', "disable it: its deliveries, and new events' deliveries, wait"))
    .option(
      '--discard-held',
      'with --enable: cancel the deliveries it held (and those queued behind them) instead of resuming them',
    )
    .option('--json', 'print the endpoint as it is now as JSON, with "discarded"')
    .action(async (endpointId: number, options: UpdateOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const changes = changesOf(options)
        const enterpriseId = await enterpriseOf(client, endpointId, options.enterprise)
        const updated = await client.updateEndpoint(enterpriseId, endpointId, changes)
        if (options.json) return printJson(updated)
        printLines(
          `Updated ${summary(updated)}.`,
          ...(options.discardHeld
            ? [`Discarded ${updated.discarded} held ${updated.discarded === 1 ? 'delivery' : 'deliveries'}.`]
            : []),
        )
      })
    })
}

function changesOf(options: UpdateOptions): EndpointChanges {
  const changes: EndpointChanges = {
    ...(options.newUrl !== undefined && { url: options.newUrl }),
    ...(options.events && { eventTypes: options.events }),
    ...(options.description !== undefined && { description: options.description }),
    ...(options.maxPerSecond !== undefined && {
      maxPerSecond: options.maxPerSecond === 'none' ? null : options.maxPerSecond,
    }),
    ...((options.enable || options.disable) && { enabled: Boolean(options.enable) }),
    ...(options.discardHeld && { discardHeld: true }),
  }
  if (options.discardHeld && !options.enable) throw new CommandFailure('--discard-held goes with --enable')
  if (Object.keys(changes).length === 0) {
    throw new CommandFailure(
      'nothing to change: give --new-url, --events, --description, --max-per-second, --enable or --disable',
    )
  }
  return changes
}

function removeCommand(): Command {
  return endpointCommand(
    'remove',
    'remove a push endpoint: nothing more is pushed to it, its deliveries not yet confirmed are cancelled',
  )
    .option('--json', 'print {"removed", "cancelled"} as JSON')
    .action(async (endpointId: number, options: EnterpriseFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const enterpriseId = await enterpriseOf(client, endpointId, options.enterprise)
        const removed = await client.removeEndpoint(enterpriseId, endpointId)
        if (options.json) return printJson(removed)
        printLines(
          `Removed endpoint ${endpointId} of enterprise ${enterpriseId}; ` +
            (removed.cancelled === 0
              ? 'it had no deliveries waiting.'
              : `${deliveries(removed.cancelled)} not yet confirmed ${removed.cancelled === 1 ? 'was' : 'were'} cancelled.`),
        )
      })
    })
}

/** A command on one endpoint: its id, and its enterprise's (found when not given). */
function endpointCommand(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .argument('<endpointId>', 'the endpoint, as `earshot endpoints list` shows it', endpointIdArgument)
    .option(
      '--enterprise <id>',
      "the endpoint's enterprise (found from the endpoint id when not given)",
      enterpriseIdArgument,
    )
}

/** The enterprise given, or else the endpoint's, found among every enterprise's endpoints. */
async function enterpriseOf(client: AdminClient, endpointId: number, given?: number): Promise<number> {
  if (given !== undefined) return given
  const found = (await client.listEndpoints()).find((endpoint) => endpoint.endpointId === endpointId)
  if (found) return found.enterpriseId
  throw new AdminApiError(
    ResponseCode.NOT_FOUND,
    `no endpoint ${endpointId}: \`earshot endpoints list\` shows the endpoints`,
    undefined,
    404,
  )
}

/** An endpoint in a few words, after "Added" or "Updated". */
function summary(endpoint: Endpoint): string {
  return (
    `endpoint ${endpoint.endpointId} of enterprise ${endpoint.enterpriseId}: ${endpoint.url} for ` +
    `${endpoint.eventTypes.map(shortEventType).join(', ')}; ${endpoint.enabled ? 'enabled' : 'disabled'}; ` +
    rate(endpoint.maxPerSecond)
  )
}

const rate = (maxPerSecond: number | null) =>
  maxPerSecond === null ? 'no rate limit' : `at most ${maxPerSecond} a second`

const EVENT_NAMES = EVENT_TYPES.map(shortEventType).join(', ')

const endpointIdArgument = positiveInteger('an endpoint id')

const eventsOption = () =>
  new Option('--events <types>', `only these event types, comma-separated: ${EVENT_NAMES}`).argParser(
    eventTypesArgument,
  )
const descriptionOption = () => new Option('--description <text>', 'what the endpoint is for, for operators')

/** Parses --events: short names (audio_ready) or full ones (recording.audio_ready), comma-separated. */
function eventTypesArgument(raw: string): PushEventTypeValue[] {
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  const unknown = names.filter((name) => !eventTypeNamed(name))
  if (names.length === 0 || unknown.length > 0) {
    const what =
      unknown.length === 0
        ? 'no event type given'
        : `unknown event type${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}`
    throw new InvalidArgumentError(
      `${what}: give one or more of ${EVENT_NAMES} (or ${EVENT_TYPES[0]} and so on), comma-separated`,
    )
  }
  return [...new Set(names.map((name) => eventTypeNamed(name) as PushEventTypeValue))]
}

const RATE_RULE = 'the rate is a whole number of deliveries a second, at least 1'

function maxPerSecondArgument(raw: string): number {
  return wholeRate(raw, RATE_RULE)
}

/** 'none' stays a word: commander takes an option's null value for ''. */
function maxPerSecondOrNone(raw: string): number | 'none' {
  return raw === 'none' ? raw : wholeRate(raw, `${RATE_RULE}, or none for no limit`)
}

function wholeRate(raw: string, rule: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) throw new InvalidArgumentError(rule)
  return Number(raw)
}
