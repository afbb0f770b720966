import { PassThrough } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { InvalidParameterError, ProtocolError, ResponseCode } from '@earshot/protocol'
import type { FastifyReply } from 'fastify'
import { toFailure } from '../http/error-handler.js'
import { toNewRecording } from '../recordings/recording-input.js'
import { INSERT_BATCH, insertRecordings, type NewRecording } from '../recordings/recording-store.js'
import type { Database } from '../storage/database.js'

const MAX_REPORTED_ERRORS = 10

/** One progress line of the import response; the last line is {imported} or {error}. */
export type ImportProgressLine =
  | { progress: number; total: number }
  | { imported: number }
  | { error: { code: number; msg: string } }

/**
 * Validates every line first — a bad line is reported with its line number and nothing is imported —
 * then inserts all of them in one transaction, streaming NDJSON progress. `{imported}` is written
 * only after the commit: it is the acknowledgement. A client that goes away rolls the import back.
 */
export async function importJsonLines(
  db: Database,
  enterpriseId: number,
  text: string,
  newAudioId: () => string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { recordings, lineOf } = parseJsonLines(text, newAudioId)
  await refuseExisting(db, recordings, lineOf)

  const stream = new PassThrough()
  const write = (line: ImportProgressLine) => stream.write(`${JSON.stringify(line)}\n`)
  let clientGone = false
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) clientGone = true
  })
  reply.type('application/x-ndjson').send(stream)

  const total = recordings.length
  write({ progress: 0, total })
  db.transaction(async (tx) => {
    for (let done = 0; done < total; done += INSERT_BATCH) {
      if (clientGone) throw new Error('the client went away; the import was rolled back')
      await insertRecordings(tx, enterpriseId, recordings.slice(done, done + INSERT_BATCH))
      write({ progress: Math.min(done + INSERT_BATCH, total), total })
      // PGlite resolves queries without yielding to the event loop; without this turn nothing
      // (progress lines, other requests) would get out until the whole import is done.
      await nextTurn()
    }
  })
    .then(() => stream.end(`${JSON.stringify({ imported: total } satisfies ImportProgressLine)}\n`))
    .catch((error: unknown) => {
      const failure = toFailure(error) ?? {
        code: ResponseCode.INTERNAL_ERROR,
        msg: 'the import failed and was rolled back',
      }
      if (!(error instanceof ProtocolError)) reply.log.error({ err: error }, 'import failed')
      stream.end(
        `${JSON.stringify({ error: { code: failure.code, msg: failure.msg } } satisfies ImportProgressLine)}\n`,
      )
    })
  return reply
}

/** Parses and validates every line; throws one InvalidParameterError listing the first bad lines. */
export function parseJsonLines(
  text: string,
  newAudioId: () => string,
): { recordings: NewRecording[]; lineOf: Map<string, number> } {
  const recordings: NewRecording[] = []
  const problems: string[] = []
  const lineOfAudioId = new Map<string, number>()
  const lines = text.split('\n')
  for (let index = 0; index < lines.length && problems.length < MAX_REPORTED_ERRORS; index++) {
    const line = (lines[index] as string).replace(/\r$/, '')
    if (line.trim() === '') continue
    const lineNumber = index + 1
    try {
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        throw new InvalidParameterError('', 'is not valid JSON')
      }
      const recording = toNewRecording(value, newAudioId)
      const seen = lineOfAudioId.get(recording.audioId)
      if (seen !== undefined)
        throw new InvalidParameterError('audioId', `repeats the audioId of line ${seen}`)
      lineOfAudioId.set(recording.audioId, lineNumber)
      recordings.push(recording)
    } catch (error) {
      if (!(error instanceof InvalidParameterError)) throw error
      problems.push(`line ${lineNumber}: ${error.message}`)
    }
  }
  if (problems.length > 0) {
    throw new InvalidParameterError('', `nothing was imported; ${problems.join('; ')}`)
  }
  if (recordings.length === 0) throw new InvalidParameterError('', 'the file holds no recordings')
  return { recordings, lineOf: lineOfAudioId }
}

async function refuseExisting(
  db: Database,
  recordings: NewRecording[],
  lineOf: Map<string, number>,
): Promise<void> {
  const ids = recordings.map((recording) => recording.audioId)
  const existing = await db.query<{ audio_id: string }>(
    'SELECT audio_id FROM recordings WHERE audio_id = ANY($1::text[]) LIMIT $2',
    [ids, MAX_REPORTED_ERRORS],
  )
  if (existing.length > 0) {
    const problems = existing.map(
      ({ audio_id }) => `line ${lineOf.get(audio_id)}: audioId ${JSON.stringify(audio_id)} already exists`,
    )
    throw new InvalidParameterError('', `nothing was imported; ${problems.join('; ')}`)
  }
}
