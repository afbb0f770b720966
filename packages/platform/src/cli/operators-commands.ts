import { positiveInteger } from '@earshot/support/cli'
import { Command, Option } from 'commander'
import type { Role } from '../access/roles.js'
import type { Operator, OperatorChanges } from '../admin-client/admin-client.js'
import { enterprisesOption, type JsonFlag, roleOption, scopeCell, scopeText } from './access-options.js'
import {
  CommandFailure,
  printJson,
  printLines,
  reportUsageErrors,
  runClient,
  table,
} from './client-command.js'

interface AddOptions extends JsonFlag {
  role: Role
  name?: string
  enterprise?: number[]
}

interface UpdateOptions extends JsonFlag {
  role?: Role
  name?: string
  enterprise?: number[]
  allEnterprises?: boolean
  enable?: boolean
  disable?: boolean
}

/** `earshot operators add|list|update|sign-out`: the people who sign in to the console (an owner's). */
export function operatorsCommand(): Command {
  return reportUsageErrors(
    new Command('operators')
      .description(
        'add operators (each gets a one-time setup link), list them, change their role, scope or name, ' +
          'disable them, end their sessions',
      )
      .addCommand(addCommand())
      .addCommand(listCommand())
      .addCommand(updateCommand())
      .addCommand(signOutCommand()),
  )
}

function addCommand(): Command {
  return new Command('add')
    .description('add an operator and print the one-time link (valid 7 days) where they set their password')
    .argument('<email>', 'the email they sign in with')
    .addOption(roleOption('what they may do').makeOptionMandatory())
    .option('--name <name>', 'their name, as the console and the audit trail show it')
    .addOption(enterprisesOption('limit them to this enterprise; without it, every enterprise'))
    .option('--json', 'print {"operatorId", "setupUrl"} as JSON')
    .action(async (email: string, options: AddOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const added = await client.addOperator({
          email,
          role: options.role,
          ...(options.name !== undefined && { name: options.name }),
          ...(options.enterprise && { enterprises: options.enterprise }),
        })
        if (options.json) return printJson(added)
        printLines(
          `Added operator ${added.operatorId} (${email}): role ${options.role}, ${scopeText(options.enterprise ?? null)}.`,
          'Send them this one-time link (valid 7 days) to set their password:',
          `  ${added.setupUrl}`,
        )
      })
    })
}

function listCommand(): Command {
  return new Command('list')
    .description('list operators with their role, scope and whether they can sign in')
    .option('--json', 'print the operators as a JSON array')
    .action(async (options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const operators = await client.listOperators()
        if (options.json) return printJson(operators)
        printLines(
          ...table(
            ['ID', 'EMAIL', 'NAME', 'ROLE', 'ENTERPRISES', 'STATE', 'SIGN-IN'],
            operators.map((operator) => [
              String(operator.operatorId),
              operator.email,
              operator.name || '-',
              operator.role,
              scopeCell(operator.enterprises),
              operator.enabled ? 'enabled' : 'disabled',
              signIn(operator),
            ]),
          ),
        )
      })
    })
}

function updateCommand(): Command {
  return new Command('update')
    .description("change an operator's role, name, enterprises or enabled; what is not given stays as it is")
    .argument('<operatorId>', 'the operator, as `earshot operators list` shows it', operatorIdArgument)
    .addOption(roleOption('their new role'))
    .option('--name <name>', 'their new name')
    .addOption(enterprisesOption('limit them to this enterprise from now on').conflicts('allEnterprises'))
    .option('--all-enterprises', 'lift their limit: every enterprise')
    .addOption(new Option('--enable', 'let them sign in again').conflicts('disable'))
    .addOption(new Option('--disable', 'stop them signing in: their sessions end at once, on every instance'))
    .option('--json', 'print the operator as it is now as JSON')
    .action(async (operatorId: number, options: UpdateOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const updated = await client.updateOperator(operatorId, changesOf(options))
        if (options.json) return printJson(updated)
        printLines(
          `Operator ${updated.operatorId} (${updated.email}): role ${updated.role}, ` +
            `${scopeText(updated.enterprises)}, ${updated.enabled ? 'enabled' : 'disabled: their sessions ended'}.`,
        )
      })
    })
}

function changesOf(options: UpdateOptions): OperatorChanges {
  const changes: OperatorChanges = {
    ...(options.role !== undefined && { role: options.role }),
    ...(options.name !== undefined && { name: options.name }),
    ...(options.enterprise && { enterprises: options.enterprise }),
    ...(options.allEnterprises && { enterprises: null }),
    ...((options.enable || options.disable) && { enabled: Boolean(options.enable) }),
  }
  if (Object.keys(changes).length === 0) {
    throw new CommandFailure(
      'nothing to change: give --role, --name, --enterprise, --all-enterprises, --enable or --disable',
    )
  }
  return changes
}

function signOutCommand(): Command {
  return new Command('sign-out')
    .description("end every session of an operator's, on every instance (they can sign in again)")
    .argument('<operatorId>', 'the operator, as `earshot operators list` shows it', operatorIdArgument)
    .option('--json', 'print {"ended"} (the sessions ended) as JSON')
    .action(async (operatorId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const { ended } = await client.endOperatorSessions(operatorId)
        if (options.json) return printJson({ ended })
        printLines(`Ended ${ended} ${ended === 1 ? 'session' : 'sessions'} of operator ${operatorId}.`)
      })
    })
}

/** How an operator signs in: single sign-on, a password, or not yet (their setup link is unused). */
function signIn(operator: Operator): string {
  if (operator.sso) return 'single sign-on'
  return operator.setUp ? 'password' : 'not set up'
}

const operatorIdArgument = positiveInteger('an operator id')
