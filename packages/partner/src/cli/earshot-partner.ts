#!/usr/bin/env node
/**
 * The `earshot-partner` command: a partner's side of the API from the shell. Credentials
 * come from EARSHOT_BASE_URL, EARSHOT_ENTERPRISE_ID, EARSHOT_KEY_VERSION and EARSHOT_SECRET, or flags.
 */
import { reportUsageErrors } from '@earshot/support/cli'
import { Command } from 'commander'
import { credentialOptions, reportFailure } from './command-support.js'
import { deliveriesCommand, levelsCommand, replayCommand } from './delivery-commands.js'
import { downloadCommand } from './download-command.js'
import { checkCommand, endpointsCommand } from './endpoint-commands.js'
import { portalCommand, rotateKeyCommand } from './key-and-portal-commands.js'
import { listenCommand } from './listen-command.js'
import { exportCommand, queryCommand, tokenCommand } from './query-commands.js'
import { syncCommand } from './sync-command.js'

const program = new Command('earshot-partner').description(
  'The Earshot partner kit: get a token, query and export recordings, download their audio, receive pushes, ' +
    'mirror the feed; manage your endpoints, deliveries, key and portal access.',
)
for (const option of credentialOptions()) program.addOption(option)
program
  .addCommand(tokenCommand())
  .addCommand(queryCommand())
  .addCommand(exportCommand())
  .addCommand(downloadCommand())
  .addCommand(listenCommand())
  .addCommand(syncCommand())
  .addCommand(endpointsCommand())
  .addCommand(deliveriesCommand())
  .addCommand(replayCommand())
  .addCommand(checkCommand())
  .addCommand(levelsCommand())
  .addCommand(rotateKeyCommand())
  .addCommand(portalCommand())

const hintOnError = (command: Command): void => {
  command.showHelpAfterError('(add --help for usage)')
  command.commands.forEach(hintOnError)
}
hintOnError(program)
reportUsageErrors(program)

// Whatever a command lets through still follows the --json convention: one line, no stack, exit 1.
const json = process.argv.slice(2).includes('--json')
const crash = (error: unknown) => {
  reportFailure(error, { json })
  process.exit(1)
}
process.on('uncaughtException', crash)
process.on('unhandledRejection', crash)
try {
  await program.parseAsync(process.argv)
} catch (error) {
  reportFailure(error, { json })
}
