import { Command } from 'commander'
import { printJson, printLines, reportUsageErrors, runClient } from './client-command.js'

/** `earshot media rotate-link-key [--retire-others] [--json]`. */
export function mediaCommand(): Command {
  const media = new Command('media').description('the links to stored audio').addCommand(
    new Command('rotate-link-key')
      .description(
        'sign new media links with a new key; links given before keep working until they expire, ' +
          'unless --retire-others (a key has leaked)',
      )
      .option('--retire-others', 'links signed with earlier keys stop working now')
      .option('--json', 'print {"keyId", "retiredOthers"} as JSON')
      .action(async (options: { retireOthers?: boolean; json?: boolean }, command: Command) => {
        await runClient(command, { json: Boolean(options.json) }, async (client) => {
          const rotated = await client.rotateLinkKey(Boolean(options.retireOthers))
          if (options.json) return printJson(rotated)
          printLines(
            `Media links are now signed with key ${rotated.keyId}` +
              (rotated.retiredOthers ? '; links signed before no longer work.' : '.'),
          )
        })
      }),
  )
  return reportUsageErrors(media)
}
