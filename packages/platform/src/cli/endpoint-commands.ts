import { Command } from 'commander'
import type { Endpoint } from '../admin-client/admin-client.js'
import { printJson, printLines, reportUsageErrors, runClient, table } from './client-command.js'

interface JsonFlag {
  json?: boolean
}

/** `earshot endpoints list|enable`: the health of push URLs. */
export function endpointsCommand(): Command {
  const endpoints = new Command('endpoints').description(
    'show the health of push URLs; enable a disabled one again, resuming the deliveries it held',
  )

  endpoints
    .command('list')
    .description('list every push URL with its health (healthy, failing, disabled) and why')
    .option('--json', 'print the push URLs as a JSON array')
    .action(async (options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const found = await client.listEndpoints()
        if (options.json) return printJson(found)
        if (found.length === 0) return printLines('No push URLs: no enterprise has one.')
        const rows = found.map((endpoint) => [
          endpoint.url,
          endpoint.state,
          endpoint.enterprises.join(',') || '-',
          String(endpoint.consecutiveFailures),
          endpoint.lastSuccessAt ?? '-',
          endpoint.lastFailureAt ?? '-',
        ])
        printLines(
          ...table(['URL', 'STATE', 'ENTERPRISES', 'FAILURES', 'LAST SUCCESS', 'LAST FAILURE'], rows),
          ...found.filter((endpoint) => endpoint.reason !== null).flatMap(describeTrouble),
        )
      })
    })

  endpoints
    .command('enable')
    .description(
      'make a push URL healthy again: the deliveries it held are pushed, in due order, and those that failed since it began failing',
    )
    .argument('<url>', 'the push URL, as `earshot endpoints list` shows it')
    .option('--json', 'print {"url", "enabled", "resumed", "replayed", "endpoint"} as JSON')
    .action(async (url: string, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const enabled = await client.enableEndpoint(url)
        if (options.json) return printJson(enabled)
        printLines(
          `Enabled ${enabled.url}: it is healthy again; ` +
            (enabled.resumed === 0
              ? 'it held no deliveries'
              : `${deliveries(enabled.resumed)} it held ${enabled.resumed === 1 ? 'resumes' : 'resume'}, in due order`) +
            (enabled.replayed === 0
              ? '.'
              : `; ${deliveries(enabled.replayed)} that failed since it began failing ${enabled.replayed === 1 ? 'is' : 'are'} pushed again.`),
        )
      })
    })

  return reportUsageErrors(endpoints)
}

const deliveries = (n: number) => `${n} ${n === 1 ? 'delivery' : 'deliveries'}`

function describeTrouble(endpoint: Endpoint): string[] {
  const lines = [`${endpoint.url} is ${endpoint.state}: ${endpoint.reason}`]
  if (endpoint.state === 'disabled') {
    lines.push(
      `  Its deliveries are held, none dropped. Once the partner fixed it: earshot endpoints enable ${endpoint.url}`,
    )
  }
  return lines
}
