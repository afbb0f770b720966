import { describeCheckReport } from '@earshot/protocol'
import { positiveInteger } from '@earshot/support/cli'
import { Command } from 'commander'
import { enterpriseIdArgument, printJson, printLines, runClient } from './client-command.js'

interface CheckOptions {
  enterprise: number
  callbackWithin?: number
  json?: boolean
}

/** `earshot endpoints check URL --enterprise ID`: the receiver check; exit 0 only when it passed. */
export function receiverCheckCommand(): Command {
  return new Command('check')
    .description(
      "check a partner's push receiver against the protocol before it goes live: a scripted series of " +
        "pushes sealed with the enterprise's current key (X-Earshot-Check: 1, audioIds check_…; their " +
        'callbacks never count as receipts), each item reported with what came back',
    )
    .argument('<url>', 'the receiver: an absolute http(s) URL')
    .requiredOption('--enterprise <id>', 'the enterprise whose key seals the pushes', enterpriseIdArgument)
    .option(
      '--callback-within <seconds>',
      'how long to wait for each receipt callback after its answer, 1 to 60 (default 60)',
      positiveInteger('a number of seconds'),
    )
    .option('--json', 'print the report as JSON: {url, enterpriseId, keyVersion, passed, items}')
    .action(async (url: string, options: CheckOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        if (!options.json) {
          const wait = options.callbackWithin ?? 60
          process.stderr.write(
            `Checking ${url} for enterprise ${options.enterprise} (callbacks: up to ${wait} s)…\n`,
          )
        }
        const report = await client.checkReceiver(options.enterprise, url, options.callbackWithin)
        if (options.json) printJson(report)
        else printLines(...describeCheckReport(report))
        if (!report.passed) process.exitCode = 1
      })
    })
}
