import { PORTAL_ACCESS } from '@earshot/protocol'
import { Command, Option } from 'commander'
import type { PortalAccess } from '../client/integration-types.js'
import { printJson, printLines, runWithClient } from './command-support.js'

interface JsonFlag {
  json?: boolean
}

/** `earshot-partner rotate-key`: a new key, its secret printed this once. */
export function rotateKeyCommand(): Command {
  return new Command('rotate-key')
    .description(
      'give your enterprise a new key and print its keyVersion and secret, this once; the old key keeps ' +
        'working for the grace period, so every client has time to switch',
    )
    .option('--json', 'print {"keyVersion", "secret"} as JSON')
    .action(async (options: JsonFlag, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const { keyVersion, secret } = await client.rotateKey()
        const store =
          `Store them now as EARSHOT_KEY_VERSION=${keyVersion} and EARSHOT_SECRET (or pass --key-version ` +
          'and --secret): the secret is not shown again. The old key works until its grace period ends.'
        if (options.json) {
          printJson({ keyVersion, secret })
          process.stderr.write(`${store}\n`)
          return
        }
        printLines(`New keyVersion: ${keyVersion}`, `New secret:     ${secret}`, store)
      })
    })
}

/** `earshot-partner portal [--access view|manage]`: a one-time link into the portal. */
export function portalCommand(): Command {
  return new Command('portal')
    .description(
      'print a one-time link into the Earshot portal, where you manage your endpoints and deliveries ' +
        'in a browser; it expires after a few minutes, and opens a session once',
    )
    .addOption(
      new Option('--access <access>', 'view (the default): look only; manage: change things too').choices(
        PORTAL_ACCESS,
      ),
    )
    .option('--json', 'print {"url", "expiresAt"} as JSON')
    .action(async (options: JsonFlag & { access?: PortalAccess }, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const link = await client.portalLink({ access: options.access })
        if (options.json) return printJson({ url: link.url, expiresAt: link.expiresAt })
        printLines(link.url)
        process.stderr.write(`A one-time link: open it before ${link.expiresAt}.\n`)
      })
    })
}
