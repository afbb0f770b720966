import { describeCheckReport, MAX_CALLBACK_SECONDS } from '@earshot/protocol'
import { Command, Option } from 'commander'
import type { Endpoint, EndpointChanges } from '../client/integration-types.js'
import {
  CommandFailure,
  positiveInteger,
  printJson,
  printLines,
  runWithClient,
  table,
} from './command-support.js'
import { EVENT_NAMES, eventTypesArgument, shortEventType } from './event-types.js'

interface JsonFlag {
  json?: boolean
}

interface AddOptions extends JsonFlag {
  events?: string[]
  description?: string
  maxPerSecond?: number
}

interface UpdateOptions extends Omit<AddOptions, 'maxPerSecond'> {
  maxPerSecond?: number | 'none'
  url?: string
  enable?: boolean
  disable?: boolean
}

/** `earshot-partner endpoints list|add|update|remove`: your push endpoints. */
export function endpointsCommand(): Command {
  return new Command('endpoints')
    .description(
      'your push endpoints: list them with their health, add one, change one (URL, event types, ' +
        'description, rate, enabled), remove one',
    )
    .addCommand(listCommand())
    .addCommand(addCommand())
    .addCommand(updateCommand())
    .addCommand(removeCommand())
}

function listCommand(): Command {
  return new Command('list')
    .description("list your push endpoints with their URL's health")
    .option('--json', 'print {"items": [endpoint…]} as JSON')
    .action(async (options: JsonFlag, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const list = await client.listEndpoints()
        if (options.json) return printJson(list)
        if (list.items.length === 0) {
          return printLines('You have no endpoints; add one with: earshot-partner endpoints add URL')
        }
        printLines(...endpointTable(list.items), ...endpointTrouble(list.items))
      })
    })
}

function addCommand(): Command {
  return new Command('add')
    .description('add a push endpoint (by default: every event type, enabled, no rate limit)')
    .argument('<url>', 'where to push: an absolute http(s) URL your receiver listens on')
    .addOption(eventsOption())
    .option('--description <text>', 'what the endpoint is for')
    .option('--max-per-second <n>', 'push at most this many deliveries a second', rateArgument)
    .option('--json', 'print the endpoint as JSON')
    .action(async (url: string, options: AddOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const { events, description, maxPerSecond } = options
        const added = await client.addEndpoint({ url, eventTypes: events, description, maxPerSecond })
        if (options.json) return printJson(added)
        printLines(`Added ${summary(added)}.`)
      })
    })
}

function updateCommand(): Command {
  return new Command('update')
    .description('change a push endpoint; what is not given stays as it is')
    .argument('<endpointId>', 'the endpoint, as `earshot-partner endpoints list` shows it', endpointId)
    .option('--url <url>', 'push to this URL instead (its open deliveries go there)')
    .addOption(eventsOption())
    .option('--description <text>', 'what the endpoint is for')
    .option(
      '--max-per-second <n>',
      'push at most this many deliveries a second; none for no limit',
      rateOrNone,
    )
    .addOption(new Option('--enable', 'enable it: the deliveries it held resume').conflicts('disable'))
    .addOption(new Option('--disable', "disable it: its deliveries, and new events' deliveries, wait"))
    .option('--json', 'print the endpoint as it is now as JSON')
    .action(async (id: number, options: UpdateOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const updated = await client.updateEndpoint(id, changesOf(options))
        if (options.json) return printJson(updated)
        printLines(`Updated ${summary(updated)}.`)
      })
    })
}

function changesOf(options: UpdateOptions): EndpointChanges {
  const changes = Object.fromEntries(
    Object.entries({
      url: options.url,
      eventTypes: options.events,
      description: options.description,
      maxPerSecond: options.maxPerSecond === 'none' ? null : options.maxPerSecond,
      enabled: options.enable || options.disable ? Boolean(options.enable) : undefined,
    }).filter(([, value]) => value !== undefined),
  )
  if (Object.keys(changes).length === 0) {
    throw new CommandFailure(
      'nothing to change: give --url, --events, --description, --max-per-second, --enable or --disable',
    )
  }
  return changes
}

function removeCommand(): Command {
  return new Command('remove')
    .description(
      'remove a push endpoint: nothing more is pushed to it, its unconfirmed deliveries are cancelled',
    )
    .argument('<endpointId>', 'the endpoint, as `earshot-partner endpoints list` shows it', endpointId)
    .option('--json', 'print {"endpointId", "cancelled"} as JSON')
    .action(async (id: number, options: JsonFlag, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const removed = await client.removeEndpoint(id)
        if (options.json) return printJson(removed)
        const { cancelled } = removed
        printLines(
          `Removed endpoint ${id}; ` +
            (cancelled === 0
              ? 'it had no deliveries waiting.'
              : `${cancelled} ${cancelled === 1 ? 'delivery' : 'deliveries'} not yet confirmed cancelled.`),
        )
      })
    })
}

/** `earshot-partner check URL`: the receiver check; exit 0 only when it passed. */
export function checkCommand(): Command {
  return new Command('check')
    .description(
      'check your push receiver against the protocol: the platform sends it a scripted series of pushes ' +
        'sealed with your current key (X-Earshot-Check: 1, audioIds check_…, never stored as recordings) ' +
        'and reports each item with what came back; exits 1 when it fails',
    )
    .argument('<url>', 'the receiver: an absolute http(s) URL')
    .option(
      '--callback-within <seconds>',
      `how long to wait for each receipt callback after its answer, 1 to ${MAX_CALLBACK_SECONDS} (default ${MAX_CALLBACK_SECONDS})`,
      positiveInteger('a number of seconds'),
    )
    .option('--json', 'print the report as JSON: {url, enterpriseId, keyVersion, passed, items}')
    .action(async (url: string, options: JsonFlag & { callbackWithin?: number }, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const wait = options.callbackWithin ?? MAX_CALLBACK_SECONDS
        if (!options.json) process.stderr.write(`Checking ${url} (callbacks: up to ${wait} s)…\n`)
        const report = await client.checkReceiver(url, { callbackWithinSeconds: options.callbackWithin })
        if (options.json) printJson(report)
        else printLines(...describeCheckReport(report))
        if (!report.passed) process.exitCode = 1
      })
    })
}

function endpointTable(endpoints: Endpoint[]): string[] {
  const rows = endpoints.map((endpoint) => [
    String(endpoint.endpointId),
    endpoint.url,
    endpoint.eventTypes.map(shortEventType).join(','),
    endpoint.enabled ? 'enabled' : 'disabled',
    endpoint.health.state,
    endpoint.maxPerSecond === null ? '-' : `${endpoint.maxPerSecond}/s`,
    String(endpoint.waiting),
  ])
  return table(['ID', 'URL', 'EVENTS', 'STATE', 'HEALTH', 'RATE', 'WAITING'], rows)
}

/** Why each troubled URL is so (once per URL), and which endpoints are disabled. */
function endpointTrouble(endpoints: Endpoint[]): string[] {
  const troubled = new Map<string, string>()
  for (const { url, health } of endpoints) {
    if (health.reason !== null) troubled.set(url, `${url} is ${health.state}: ${health.reason}`)
  }
  const disabled = endpoints
    .filter((endpoint) => !endpoint.enabled)
    .map(
      ({ endpointId }) =>
        `Endpoint ${endpointId} is disabled: its deliveries wait. To enable it: earshot-partner endpoints update ${endpointId} --enable`,
    )
  return [...troubled.values(), ...disabled]
}

/** An endpoint in a few words, after "Added" or "Updated". */
function summary(endpoint: Endpoint): string {
  const rate = endpoint.maxPerSecond === null ? 'no rate limit' : `at most ${endpoint.maxPerSecond} a second`
  return (
    `endpoint ${endpoint.endpointId}: ${endpoint.url} for ` +
    `${endpoint.eventTypes.map(shortEventType).join(', ')}; ${endpoint.enabled ? 'enabled' : 'disabled'}; ${rate}`
  )
}

const endpointId = positiveInteger('an endpoint id')
const rateArgument = positiveInteger('a number of deliveries a second')

/** 'none' stays a word: commander takes an option's null value for ''. */
const rateOrNone = (raw: string): number | 'none' => (raw === 'none' ? raw : rateArgument(raw))

const eventsOption = () =>
  new Option('--events <types>', `only these event types, comma-separated: ${EVENT_NAMES}`).argParser(
    eventTypesArgument,
  )
