import { Command } from 'commander'
import type { PushUrlState } from '../admin-client/admin-client.js'
import { printJson, printLines, runClient, table } from './client-command.js'

interface JsonFlag {
  json?: boolean
}

/** `earshot endpoints urls|enable`: the health of push URLs, shared by every endpoint with the URL. */
export function pushUrlsCommand(): Command[] {
  return [urlsCommand(), enableCommand()]
}

function urlsCommand(): Command {
  return new Command('urls')
    .description('list every push URL with its health (healthy, failing, disabled) and why')
    .option('--json', 'print the push URLs as a JSON array')
    .action(async (options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const found = await client.listPushUrls()
        if (options.json) return printJson(found)
        if (found.length === 0) return printLines('No push URLs: no enterprise has an endpoint.')
        const rows = found.map((pushUrl) => [
          pushUrl.url,
          pushUrl.state,
          pushUrl.enterprises.join(',') || '-',
          String(pushUrl.consecutiveFailures),
          pushUrl.lastSuccessAt ?? '-',
          pushUrl.lastFailureAt ?? '-',
        ])
        printLines(
          ...table(['URL', 'STATE', 'ENTERPRISES', 'FAILURES', 'LAST SUCCESS', 'LAST FAILURE'], rows),
          ...found.filter((pushUrl) => pushUrl.reason !== null).flatMap(describeTrouble),
        )
      })
    })
}

function enableCommand(): Command {
  return new Command('enable')
    .description(
      'make a push URL healthy again: the deliveries it held are pushed, in due order, and those that failed since it began failing',
    )
    .argument('<url>', 'the push URL, as `earshot endpoints urls` shows it')
    .option('--json', 'print {"url", "enabled", "resumed", "replayed", "endpoint"} as JSON')
    .action(async (url: string, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const enabled = await client.enablePushUrl(url)
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
}

export const deliveries = (n: number) => `${n} ${n === 1 ? 'delivery' : 'deliveries'}`

/** Why a push URL is failing or disabled, and for a disabled one how to enable it. */
export function describeTrouble(pushUrl: {
  url: string
  state: PushUrlState
  reason: string | null
}): string[] {
  const lines = [`${pushUrl.url} is ${pushUrl.state}: ${pushUrl.reason}`]
  if (pushUrl.state === 'disabled') {
    lines.push(
      `  Its deliveries are held, none dropped. Once the partner fixed it: earshot endpoints enable ${pushUrl.url}`,
    )
  }
  return lines
}
