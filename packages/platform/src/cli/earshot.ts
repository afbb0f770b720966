#!/usr/bin/env node
/**
 * The `earshot` command: `serve` runs the platform; every other command is a client of its admin API,
 * found at --url / EARSHOT_URL, with the API key --api-key / EARSHOT_API_KEY or else the break-glass
 * token --admin-token / EARSHOT_ADMIN_TOKEN.
 */
import { Command, Option } from 'commander'
import { DEFAULT_ADMIN_URL } from '../admin-client/admin-client.js'
import { auditCommand } from './audit-commands.js'
import { deliveriesCommand } from './deliveries-commands.js'
import { endpointsCommand } from './endpoint-commands.js'
import { enterpriseCommand } from './enterprise-commands.js'
import { erasureCommand } from './erasure-commands.js'
import { keysCommand } from './keys-commands.js'
import { mediaCommand } from './media-commands.js'
import { operatorsCommand } from './operators-commands.js'
import { portalCommand } from './portal-commands.js'
import { recordingsCommand } from './recordings-commands.js'
import { serveCommand } from './serve-command.js'
import { workerCommand } from './worker-command.js'

const program = new Command('earshot')
  .description('The Earshot platform: run it (serve) and operate it through its admin API.')
  .addOption(
    new Option('--url <url>', 'where the admin API listens (client commands)')
      .env('EARSHOT_URL')
      .default(DEFAULT_ADMIN_URL),
  )
  .addOption(
    new Option('--api-key <key>', 'the API key the client commands send (earshot keys create)').env(
      'EARSHOT_API_KEY',
    ),
  )
  .addOption(
    new Option(
      '--admin-token <token>',
      'the break-glass owner key: sent by the client commands when no API key is given; for serve, turns it on',
    ).env('EARSHOT_ADMIN_TOKEN'),
  )
  .addCommand(serveCommand())
  .addCommand(workerCommand())
  .addCommand(enterpriseCommand())
  .addCommand(recordingsCommand())
  .addCommand(deliveriesCommand())
  .addCommand(endpointsCommand())
  .addCommand(portalCommand())
  .addCommand(erasureCommand())
  .addCommand(mediaCommand())
  .addCommand(keysCommand())
  .addCommand(operatorsCommand())
  .addCommand(auditCommand())

const hintOnError = (command: Command): void => {
  command.showHelpAfterError('(add --help for usage)')
  command.commands.forEach(hintOnError)
}
hintOnError(program)

await program.parseAsync(process.argv)
