import { positiveInteger } from '@earshot/support/cli'
import { Command, Option } from 'commander'
import type { JsonFlag } from './access-options.js'
import {
  enterpriseIdArgument,
  printJson,
  printLines,
  reportUsageErrors,
  runClient,
  table,
} from './client-command.js'

interface LinkOptions extends JsonFlag {
  enterprise: number
  access?: 'view' | 'manage'
  operatorView?: boolean
}

/** `earshot portal link|sessions|end`: links into a partner's portal, and its sessions. */
export function portalCommand(): Command {
  return reportUsageErrors(
    new Command('portal')
      .description(
        "the partner portal: mint a one-time link into an enterprise's portal (for its partner, or to see what it sees), list and end portal sessions",
      )
      .addCommand(linkCommand())
      .addCommand(sessionsCommand())
      .addCommand(endCommand()),
  )
}

function linkCommand(): Command {
  return new Command('link')
    .description(
      'mint a one-time link into the portal of an enterprise: it opens once, within EARSHOT_PORTAL_LINK_TTL (15 min by default)',
    )
    .requiredOption('--enterprise <id>', 'the enterprise whose portal it opens', enterpriseIdArgument)
    .addOption(
      new Option('--access <access>', 'view reads only; manage may also change endpoints and rotate the key')
        .choices(['view', 'manage'])
        .default('view'),
    )
    .addOption(
      new Option('--operator-view', 'a link for yourself: see what the partner sees, read-only').conflicts(
        'access',
      ),
    )
    .option('--json', 'print {"url", "expiresAt"} as JSON')
    .action(async (options: LinkOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const params = { enterpriseId: options.enterprise }
        const minted = options.operatorView
          ? await client.call('createOperatorViewLink', { params })
          : await client.call('createPortalLink', { params, body: { access: options.access ?? 'view' } })
        if (options.json) return printJson(minted)
        printLines(
          options.operatorView
            ? `A read-only look at enterprise ${options.enterprise}'s portal, as its partner sees it:`
            : `A ${options.access} link into enterprise ${options.enterprise}'s portal, for its partner:`,
          `  ${minted.url}`,
          `It opens once, until ${minted.expiresAt}; its session lasts EARSHOT_PORTAL_SESSION_TTL (8 h by default) unless ended: earshot portal end.`,
        )
      })
    })
}

function sessionsCommand(): Command {
  return new Command('sessions')
    .description('list portal sessions, newest first; ended or expired ones stay listed for a day')
    .option('--enterprise <id>', "only this enterprise's sessions", enterpriseIdArgument)
    .option('--json', 'print the sessions as a JSON array (sessionId, enterpriseId, access, …, endedAt)')
    .action(async (options: JsonFlag & { enterprise?: number }, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const query = options.enterprise === undefined ? {} : { enterpriseId: String(options.enterprise) }
        const { sessions } = await client.call('listPortalSessions', { query })
        if (options.json) return printJson(sessions)
        if (sessions.length === 0) return printLines('No portal sessions.')
        const now = Date.now()
        printLines(
          ...table(
            ['ID', 'ENTERPRISE', 'ACCESS', 'STATE', 'LAST SEEN', 'EXPIRES', 'MINTED BY', 'ADDRESS'],
            sessions.map((session) => [
              String(session.sessionId),
              String(session.enterpriseId),
              session.operatorView ? 'operator view' : session.access,
              session.endedAt !== null ? 'ended' : Date.parse(session.expiresAt) <= now ? 'expired' : 'open',
              session.lastSeenAt,
              session.expiresAt,
              session.mintedBy,
              session.address ?? '',
            ]),
          ),
        )
      })
    })
}

function endCommand(): Command {
  return new Command('end')
    .description('end a portal session: its next request is refused, on every instance')
    .argument(
      '<sessionId>',
      'the session, as `earshot portal sessions` shows it',
      positiveInteger('a session id'),
    )
    .option('--json', 'print the session as it is now as JSON, with endedAt')
    .action(async (sessionId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const ended = await client.call('endPortalSession', { params: { sessionId } })
        if (options.json) return printJson(ended)
        printLines(
          `Ended portal session ${ended.sessionId} of enterprise ${ended.enterpriseId} at ${ended.endedAt}.`,
        )
      })
    })
}
