import { open } from 'node:fs/promises'
import { Command } from 'commander'
import { AdminApiError } from '../admin-client/admin-client.js'
import {
  CommandFailure,
  enterpriseIdArgument,
  printJson,
  printLines,
  progressBar,
  reportUsageErrors,
  runClient,
} from './client-command.js'
import { uploadAudioCommand } from './upload-audio-command.js'

/** `earshot recordings import FILE.jsonl | update AUDIO_ID | delete AUDIO_ID | upload-audio AUDIO_ID FILE --enterprise ID [--json]`. */
export function recordingsCommand(): Command {
  return reportUsageErrors(
    new Command('recordings')
      .description('ingest, update and delete recordings, and upload their audio')
      .addCommand(importCommand())
      .addCommand(updateCommand())
      .addCommand(deleteCommand())
      .addCommand(uploadAudioCommand()),
  )
}

function importCommand(): Command {
  return new Command('import')
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
      await runClient(command, { json }, async (client) => {
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
            ? await progressBar({
                format: 'importing [{bar}] {percentage}% | {value}/{total}',
                hideCursor: true,
              })
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
}

function updateCommand(): Command {
  return new Command('update')
    .description('change fields of a recording; the change feed records it')
    .argument('<audioId>', 'the recording')
    .requiredOption('--enterprise <id>', 'the enterprise the recording belongs to', enterpriseIdArgument)
    .option('--device-uid <uid>', 'the device the recording was made on')
    .option('--title <title>', 'its title')
    .option('--recorded-at <instant>', 'when it was recorded (ISO 8601 with an offset)')
    .option('--denoise-url <url>', 'where its denoised audio is')
    .option('--record-duration <n>', 'its duration', Number)
    .option('--json', 'print {"updated": "AUDIO_ID"} as JSON')
    .action(async (audioId: string, options: UpdateOptions, command: Command) => {
      const { enterprise, json, ...fields } = options
      const changes = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))
      await runClient(command, { json: Boolean(json) }, async (client) => {
        const updated = await client.updateRecording(enterprise, audioId, changes)
        if (json) return printJson(updated)
        printLines(`Updated recording ${audioId} of enterprise ${enterprise}.`)
      })
    })
}

function deleteCommand(): Command {
  return new Command('delete')
    .description(
      'delete a recording: its data leaves the query, the change feed keeps a tombstone, its pending ' +
        'pushes are cancelled and a recording.deleted event is pushed',
    )
    .argument('<audioId>', 'the recording')
    .requiredOption('--enterprise <id>', 'the enterprise the recording belongs to', enterpriseIdArgument)
    .option('--json', 'print {"deleted": "AUDIO_ID"} as JSON')
    .action(async (audioId: string, options: { enterprise: number; json?: boolean }, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const deleted = await client.deleteRecording(options.enterprise, audioId)
        if (options.json) return printJson(deleted)
        printLines(`Deleted recording ${audioId} of enterprise ${options.enterprise}.`)
      })
    })
}

interface UpdateOptions {
  enterprise: number
  json?: boolean
  deviceUid?: string
  title?: string
  recordedAt?: string
  denoiseUrl?: string
  recordDuration?: number
}
