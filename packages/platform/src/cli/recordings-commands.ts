import { open } from 'node:fs/promises'
import cliProgress from 'cli-progress'
import { Command } from 'commander'
import { AdminApiError } from './admin-client.js'
import { CommandFailure, enterpriseIdArgument, printJson, printLines, runClient } from './client-command.js'

/** `earshot recordings import FILE.jsonl --enterprise ID [--json]`. */
export function recordingsCommand(): Command {
  const recordings = new Command('recordings').description('ingest recordings')

  recordings
    .command('import')
    .description(
      'import a JSON Lines file, one recording per line; every line is validated first and a bad line ' +
        'imports nothing; lines already imported are skipped, so running it again completes an ' +
        'interrupted import',
    )
    .argument('<file>', 'the JSON Lines file (.jsonl)')
    .requiredOption('--enterprise <id>', 'the enterprise the recordings belong to', enterpriseIdArgument)
    .option('--json', 'print {"imported": N, "skipped": M} as JSON')
    .action(async (file: string, options: { enterprise: number; json?: boolean }, command: Command) => {
      const json = Boolean(options.json)
      await runClient(command, { json, jsonErrorOnStdout: false }, async (client) => {
        // Opened first so that a missing file is reported without calling the platform; then sent
        // as it is read, never held in memory.
        const handle = await open(file).catch((error: NodeJS.ErrnoException) => {
          throw new CommandFailure(
            `cannot read ${file}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`,
          )
        })
        const body = handle.createReadStream()
        const bar =
          process.stderr.isTTY && !json
            ? new cliProgress.SingleBar(
                { format: 'importing [{bar}] {percentage}% | {value}/{total}', hideCursor: true },
                cliProgress.Presets.shades_classic,
              )
            : undefined
        let started = false
        const stopBar = () => {
          if (started) bar?.stop()
          started = false
        }
        try {
          for await (const line of client.importRecordings(options.enterprise, body)) {
            if ('progress' in line) {
              if (started) bar?.update(line.progress)
              else bar?.start(line.total, line.progress)
              started = true
            } else if ('imported' in line) {
              stopBar()
              const { imported, skipped } = line
              if (json) return printJson({ imported, skipped })
              return printLines(
                `Imported ${imported} recordings into enterprise ${options.enterprise}; ` +
                  `skipped ${skipped} already imported.`,
              )
            } else if ('error' in line) {
              // Stopped after it started; reported like a refusal (the message says what is stored).
              throw new AdminApiError(line.error.code, line.error.msg, undefined, 200)
            }
          }
        } finally {
          stopBar()
          body.destroy()
        }
        throw new CommandFailure(
          'the connection closed before the platform acknowledged the import, so part of it may not ' +
            'have been committed; import the same file again to complete it',
        )
      })
    })

  return recordings
}
