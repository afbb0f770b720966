import { type FileHandle, open } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { extname } from 'node:path'
import { Transform } from 'node:stream'
import { Command, InvalidArgumentError } from 'commander'
import { type AdminClient, unreachable } from '../admin-client/admin-client.js'
import {
  CommandFailure,
  enterpriseIdArgument,
  printJson,
  printLines,
  progressBar,
  runClient,
} from './client-command.js'

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
        const { handle, size } = await openFile(file)
        const bar = process.stderr.isTTY && !json ? await uploadBar(size) : undefined
        try {
          const target = client.prepare('uploadAudio', {
            params: { enterpriseId: options.enterprise, audioId },
            query: { recordDuration: options.recordDuration },
            body: '',
            contentType,
          })
          const source = { file, handle, size, onBytes: (bytes: number) => bar?.increment(bytes) }
          const response = await putFile(target, source).catch((error: unknown) => {
            throw error instanceof CommandFailure ? error : unreachable(client.baseUrl, error)
          })
          const stored = await client.answer('uploadAudio', response)
          bar?.stop()
          if (json) return printJson(stored)
          printLines(
            `Stored ${stored.bytes} bytes (${stored.contentType}, sha256 ${stored.sha256}) as the audio of ${audioId}.`,
          )
        } finally {
          bar?.stop()
          await handle.close()
        }
      })
    })
}

/** The file, open, and its size; one that cannot be read (missing, a directory, no permission) is a CommandFailure. */
async function openFile(file: string): Promise<{ handle: FileHandle; size: number }> {
  const cannot = (why: string) => new CommandFailure(`cannot read ${file}: ${why}`)
  const handle = await open(file).catch((error: NodeJS.ErrnoException) => {
    throw cannot(error.code === 'ENOENT' ? 'no such file' : error.message)
  })
  const stats = await handle.stat()
  if (!stats.isFile()) {
    await handle.close()
    throw cannot(stats.isDirectory() ? 'it is a directory, not an audio file' : 'it is not a regular file')
  }
  return { handle, size: stats.size }
}

interface Source {
  file: string
  handle: FileHandle
  size: number
  onBytes: (bytes: number) => void
}

/**
 * Sends the file as the request's body (with node:http: fetch can neither wait for 100 Continue nor read
 * an answer that comes while the body is still being sent). Its length is declared and the body sent once
 * the platform asks for it (100 Continue), so that a file over the limit is refused (4130) before a byte
 * is sent. An answer that comes while the body is being sent is read, and the sending stops, so that the
 * write error that follows (EPIPE, a reset) does not hide it.
 */
function putFile(target: ReturnType<AdminClient['prepare']>, source: Source): Promise<Response> {
  return new Promise((resolve, reject) => {
    const send = target.url.startsWith('https:') ? httpsRequest : httpRequest
    const headers = { ...target.headers, 'content-length': String(source.size), expect: '100-continue' }
    const request = send(target.url, { method: target.method, headers })
    const body = source.handle.createReadStream({ autoClose: false, start: 0 })
    const counted = counting(source.onBytes)
    let answered = false
    request.on('continue', () => {
      if (!answered) body.pipe(counted).pipe(request)
    })
    request.on('response', (response) => {
      answered = true
      counted.unpipe(request)
      body.destroy()
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', reject)
      response.on('end', () => {
        const answer = Buffer.concat(chunks)
        resolve(new Response(answer.length > 0 ? answer : null, { status: response.statusCode ?? 502 }))
      })
    })
    request.on('error', (error) => {
      if (!answered) reject(error)
    })
    body.on('error', (error) => {
      request.destroy()
      reject(new CommandFailure(`cannot read ${source.file}: ${error.message}`))
    })
  })
}

async function uploadBar(total: number) {
  const bar = await progressBar({
    format: 'uploading [{bar}] {percentage}% | {value}/{total} bytes',
    hideCursor: true,
  })
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
