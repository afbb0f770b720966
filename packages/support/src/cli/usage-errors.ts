import type { Command } from 'commander'
import { printJson } from './output.js'

/**
 * Makes a command and its subcommands answer a command-line mistake (a missing option, a bad argument) with
 * `--json` as every failure is answered: `{"error": {"code": "ERR_EARSHOT_USAGE", "msg"}}` on stdout, the
 * library's text on stderr.
 */
export function reportUsageErrors<T extends Command>(command: T): T {
  command.configureOutput({
    outputError: (text, write) => {
      write(text)
      if (process.argv.slice(2).includes('--json')) {
        printJson({ error: { code: 'ERR_EARSHOT_USAGE', msg: text.trim().replace(/^error: /, '') } })
      }
    },
  })
  for (const sub of command.commands) reportUsageErrors(sub)
  return command
}
