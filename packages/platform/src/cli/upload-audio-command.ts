import { open } from 'node:fs/promises'
import { extname } from 'node:path'
import { Transform } from 'node:stream'
import cliProgress from 'cli-progress'
import { Command, InvalidArgumentError } from 'commander'
import { CommandFailure, enterpriseIdArgument, printJson, printLines, runClient } from './client-command.js'

/** Content types by file extension, for files given without --content-type. */
const TYPES: Record<string, string> = {
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.ogg': 'audio/ogg',
  '.opus': 'audio/opus',
  '.flac': 'audio/flac',
  '.webm': 'audio/webm',
}

interface UploadOptions {
  enterprise: number
  recordDuration?: number
  contentType?: string
  json?: boolean
}

/** `earshot recordings upload-audio AUDIO_ID FILE --enterprise ID [--record-duration N] [--json]`. */
export function uploadAudioCommand(): Command {
  return new Command('upload-audio')
    .description(
      "store a recording's audio in Earshot: partners then get signed links to it; a first audio part " +
        'is pushed as recording.audio_ready, a replacement as recording.updated',
    )
    .argument('<audioId>', 'the recording')
    .argument('<file>', 'the audio file, sent as it is read')
    .requiredOption('--enterprise <id>', 'the enterprise the recording belongs to', enterpriseIdArgument)
    .option('--record-duration <n>', 'its duration (default: kept as it was)', wholeNumber)
    .option('--content-type <type>', `its type (default from the extension: ${Object.keys(TYPES).join(' ')})`)
    .option('--json', 'print {"audioId", "bytes", "sha256", "contentType"} as JSON')
    .action(async (audioId: string, file: string, options: UploadOptions, command: Command) => {
      const json = Boolean(options.json)
      await runClient(command, { json }, async (client) => {
        const contentType = options.contentType ?? TYPES[extname(file).toLowerCase()]
        if (!contentType) {
          throw new CommandFailure(
            `cannot tell the audio type of ${file}: give --content-type (e.g. audio/wav)`,
          )
        }
        const handle = await open(file).catch((error: NodeJS.ErrnoException) => {
          throw new CommandFailure(
            `cannot read ${file}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`,
          )
        })
        const { size } = await handle.stat()
        const bar = process.stderr.isTTY && !json ? progressBar(size) : undefined
        const body = handle.createReadStream().pipe(counting((bytes) => bar?.increment(bytes)))
        try {
          const stored = await client.uploadAudio(options.enterprise, audioId, body, {
            contentType,
            recordDuration: options.recordDuration,
          })
          bar?.stop()
          if (json) return printJson(stored)
          printLines(
            `Stored ${stored.bytes} bytes (${stored.contentType}, sha256 ${stored.sha256}) as the audio of ${audioId}.`,
          )
        } finally {
          bar?.stop()
          body.destroy()
        }
      })
    })
}

function progressBar(total: number): cliProgress.SingleBar {
  const bar = new cliProgress.SingleBar(
    { format: 'uploading [{bar}] {percentage}% | {value}/{total} bytes', hideCursor: true },
    cliProgress.Presets.shades_classic,
  )
  bar.start(total, 0)
  return bar
}

function counting(onBytes: (bytes: number) => void): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      onBytes(chunk.length)
      done(null, chunk)
    },
  })
}

function wholeNumber(raw: string): number {
  if (!/^\d{1,15}$/.test(raw)) throw new InvalidArgumentError('must be a whole number')
  return Number(raw)
}
