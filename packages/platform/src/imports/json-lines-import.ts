import { PassThrough, type Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { toFailure } from '../http/error-handler.js'
import type { RecordingEvents } from '../recordings/recording-events.js'
import { checkDenoiseUrl, RecordingInput } from '../recordings/recording-input.js'
import {
  attachTranscript,
  insertRecordings,
  type NewRecording,
  type TranscriptPart,
} from '../recordings/recording-store.js'
import type { Database, Queryable } from '../storage/database.js'
import { type BodyLine, bodyTooLarge, decodeUtf8Line, limitedBody, splitLines } from './body-lines.js'
import { ImportAudioIds, type NumberedInput } from './import-audio-ids.js'
import { ImportSpool, type SpooledRecording } from './import-spool.js'
import { judgeAgainstStored } from './import-store.js'
import { jsonSyntaxProblem } from './json-position.js'

const MAX_REPORTED_PROBLEMS = 10
/** Recordings per transaction of the commit pass (and per lookup of the validation pass)... */
const CHUNK_RECORDINGS = 500
/** ...or fewer, when their lines are long: what one chunk may hold in memory. */
const CHUNK_BYTES = 8 * 1024 * 1024
/**
 * Longer lines are refused before they are parsed. The largest valid recording is about 120 KiB as
 * JSON (recording-input.ts): 4 MiB leaves room for any reasonable way of writing it (every character
 * a `\u` escape takes 6 bytes, sentences spaced out).
 */
export const MAX_LINE_BYTES = 4 * 1024 * 1024

export interface ImportSummary {
  /** New recordings, and transcripts attached to stored recordings. */
  imported: number
  /** Lines whose recording was already stored with the same content. */
  skipped: number
}

/** One progress line of the import response; the last line is the summary or {error}. */
export type ImportProgressLine =
  | { progress: number; total: number }
  | ImportSummary
  | { error: { code: number; msg: string } }

export interface ImportTarget {
  db: Database
  /** Told of the recordings stored, in each chunk's transaction (their pushes are scheduled there). */
  events: RecordingEvents
  enterpriseId: number
  bodyLimitBytes: number
  /** EARSHOT_DENOISE_URL_ALLOW_HTTP: whether a line's denoiseUrl may be http: (recording-input.ts). */
  denoiseUrlAllowHttp: boolean
}

/**
 * Imports a JSON Lines body in two passes, never holding the
 * body in memory. The validation pass reads the request stream line by line, checks every line
 * (strict UTF-8, JSON, schema, audioIds unique in the file, and against what is stored) and spools
 * the valid recordings to a temporary file; a bad line is reported with its line number and nothing
 * is written. The commit pass then stores them in chunks of their own transactions, yielding to
 * the event loop between chunks so that the platform keeps serving, and streams NDJSON progress.
 * The summary line is written after the last commit: it is the acknowledgement. A line stored
 * before with the same content is skipped, so an interrupted import (client gone, process killed,
 * a chunk failing) is completed by importing the same file again.
 */
export async function importJsonLines(
  { db, events, enterpriseId, bodyLimitBytes, denoiseUrlAllowHttp }: ImportTarget,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const spool = await ImportSpool.create()
  let total: number
  try {
    if (Number(request.headers['content-length']) > bodyLimitBytes) throw bodyTooLarge(bodyLimitBytes)
    const body = (request.body as Readable).iterator({ destroyOnReturn: false })
    total = await validate(
      db,
      { enterpriseId, denoiseUrlAllowHttp },
      splitLines(limitedBody(body, bodyLimitBytes), MAX_LINE_BYTES),
      spool,
    )
  } catch (error) {
    await spool.close()
    if (!request.raw.complete) closeAfterReply(request, reply)
    throw error
  }

  const stream = new PassThrough()
  const write = (line: ImportProgressLine) => stream.write(`${JSON.stringify(line)}\n`)
  let clientGone = false
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) clientGone = true
  })
  // One-off and long: not kept alive afterwards, so that a shutdown letting it finish need not then
  // wait for its idle connection to time out.
  reply.header('connection', 'close').type('application/x-ndjson').send(stream)

  let done = 0
  const commitAll = async (): Promise<ImportSummary> => {
    const summary: ImportSummary = { imported: 0, skipped: 0 }
    const keepStatistics = statisticsKeeper(db)
    write({ progress: 0, total })
    for await (const chunk of chunks(spool.entries())) {
      const counted = await db.transaction((tx) => commitChunk(tx, events, enterpriseId, chunk))
      summary.imported += counted.imported
      summary.skipped += counted.skipped
      done += chunk.length
      await keepStatistics(counted.imported)
      write({ progress: done, total })
      // PGlite resolves queries without yielding to the event loop; without this turn nothing
      // (progress lines, other requests, the push dispatcher) would get through until the end.
      await nextTurn()
      if (clientGone) throw new Error('the client went away')
    }
    return summary
  }
  commitAll()
    .finally(() =>
      spool
        .close()
        .catch((error: unknown) => reply.log.warn({ err: error }, 'the import spool did not close')),
    )
    .then((summary) => stream.end(`${JSON.stringify(summary satisfies ImportProgressLine)}\n`))
    .catch((error: unknown) => {
      const failure = toFailure(error)
      if (clientGone) reply.log.warn({ done, total }, 'the client went away; the import stopped')
      else if (!failure) reply.log.error({ err: error }, 'import failed')
      const { code, msg } = failure ?? { code: ResponseCode.INTERNAL_ERROR, msg: 'internal error' }
      const stopped =
        `${done} of ${total} lines were committed before the import stopped; ` +
        'import the same file again to complete it'
      stream.end(
        `${JSON.stringify({ error: { code, msg: `${msg}; ${stopped}` } } satisfies ImportProgressLine)}\n`,
      )
    })
  return reply
}

/**
 * The validation pass: spools every valid recording and returns how many there are, or throws one
 * InvalidParameterError listing the first bad lines (then the spool is incomplete). The file's audioIds
 * are kept in the database session's temporary tables (ImportAudioIds), not in memory.
 */
function validate(
  db: Database,
  { enterpriseId, denoiseUrlAllowHttp }: Pick<ImportTarget, 'enterpriseId' | 'denoiseUrlAllowHttp'>,
  lines: AsyncIterable<BodyLine>,
  spool: ImportSpool,
): Promise<number> {
  return db.session(async (session) => {
    const audioIds = await ImportAudioIds.create(session, enterpriseId)
    try {
      return await validateLines(db, { enterpriseId, denoiseUrlAllowHttp }, lines, spool, audioIds)
    } finally {
      await audioIds.close()
    }
  })
}

interface ParsedLine extends NumberedInput {
  /** About how many bytes the line takes, to keep chunks of long lines small. */
  size: number
}

async function validateLines(
  db: Database,
  { enterpriseId, denoiseUrlAllowHttp }: Pick<ImportTarget, 'enterpriseId' | 'denoiseUrlAllowHttp'>,
  lines: AsyncIterable<BodyLine>,
  spool: ImportSpool,
  audioIds: ImportAudioIds,
): Promise<number> {
  const problems: { line: number; message: string }[] = []
  const refused = (line: number, error: unknown) => {
    if (!(error instanceof InvalidParameterError)) throw error
    problems.push({ line, message: error.message })
  }
  let total = 0

  async function* parsed(): AsyncGenerator<ParsedLine> {
    let seenContent = false
    for await (const line of lines) {
      if (problems.length >= MAX_REPORTED_PROBLEMS) return
      // The first line with content tells a JSON array given whole: refused as a file, not line by line.
      if (!seenContent && startsLikeAnArray(line)) throw new InvalidParameterError('', NOT_JSON_LINES)
      seenContent ||= !isBlank(line)
      try {
        const input = parseLine(line.bytes)
        checkDenoiseUrl(input?.denoiseUrl, denoiseUrlAllowHttp)
        if (input) yield { line: line.number, input, size: line.bytes?.length ?? 0 }
      } catch (error) {
        refused(line.number, error)
      }
    }
  }

  async function* checked(): AsyncGenerator<SpooledRecording> {
    for await (const chunk of chunks(parsed())) {
      const ids = await audioIds.assign(chunk)
      const named: SpooledRecording[] = []
      chunk.forEach(({ line, input, size }, index) => {
        const audioId = ids[index]
        if (typeof audioId === 'string') named.push({ line, recording: { ...input, audioId }, size })
        else refused(line, audioId)
      })
      const verdicts = await judgeAgainstStored(db, enterpriseId, recordingsOf(named))
      named.forEach(({ line }, index) => {
        const verdict = verdicts[index]
        if (verdict?.kind === 'conflict') problems.push({ line, message: verdict.reason })
      })
      total += chunk.length
      if (problems.length === 0) yield* named
    }
  }

  await spool.fill(checked())
  if (problems.length > 0) throw new InvalidParameterError('', refusalOfLines(problems))
  if (total === 0) throw new InvalidParameterError('', 'the file holds no recordings')
  return total
}

/**
 * The refusal of a file with bad lines: one line of the message per bad line, in order, the first
 * MAX_REPORTED_PROBLEMS only (the CLI prints the message as it is: one line each there too).
 */
export function refusalOfLines(problems: { line: number; message: string }[]): string {
  const first = problems.sort((a, b) => a.line - b.line).slice(0, MAX_REPORTED_PROBLEMS)
  return [
    'nothing was imported; fix these lines and import the file again:',
    ...first.map(({ line, message }) => `line ${line}: ${message}`),
    ...(first.length === MAX_REPORTED_PROBLEMS
      ? [`(only the first ${MAX_REPORTED_PROBLEMS} bad lines are listed; there may be more)`]
      : []),
  ].join('\n')
}

export const NOT_JSON_LINES =
  'nothing was imported: the file must be JSON Lines, one recording object per line, not a JSON array ' +
  "(no [ ] around the recordings, no commas between lines); jq -c '.[]' FILE.json > FILE.jsonl converts an array"

/**
 * Whether a line (the first with content) opens a JSON array, after a byte order mark if any; a line
 * over the limit is told by its head.
 */
function startsLikeAnArray({ bytes, head }: BodyLine): boolean {
  const start = bytes ?? head
  return start !== undefined && /^(\u00ef\u00bb\u00bf)?\s*\[/.test(start.toString('latin1'))
}

function isBlank({ bytes }: BodyLine): boolean {
  return bytes !== undefined && /^\s*$/.test(bytes.toString('latin1'))
}

/** A line's recording as given (its audioId, if any, not yet checked against the file); undefined for a blank line. */
function parseLine(bytes: Buffer | undefined): RecordingInput | undefined {
  if (bytes === undefined) throw new InvalidParameterError('', `is longer than ${MAX_LINE_BYTES} bytes`)
  const text = decodeUtf8Line(bytes)
  if (text.trim() === '') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    const { column, reason } = jsonSyntaxProblem(text, error)
    throw new InvalidParameterError('', `is not valid JSON at column ${column}: ${reason}`)
  }
  if (Array.isArray(value)) {
    throw new InvalidParameterError('', 'is a JSON array: each line must be one recording object')
  }
  return RecordingInput.parse(value)
}

/** One chunk of the commit pass, judged again: another writer may have stored some of it meanwhile. */
async function commitChunk(
  tx: Queryable,
  events: RecordingEvents,
  enterpriseId: number,
  chunk: readonly SpooledRecording[],
): Promise<ImportSummary> {
  const verdicts = await judgeAgainstStored(tx, enterpriseId, recordingsOf(chunk))
  const fresh: NewRecording[] = []
  const transcripts: { audioId: string; transcript: TranscriptPart }[] = []
  chunk.forEach(({ line, recording }, index) => {
    const verdict = verdicts[index]
    if (verdict?.kind === 'new') fresh.push(recording)
    else if (verdict?.kind === 'adds-transcript' && recording.transcript) {
      transcripts.push({ audioId: recording.audioId, transcript: recording.transcript })
    } else if (verdict?.kind === 'conflict') {
      throw new InvalidParameterError('', `line ${line}: ${verdict.reason} (stored after the validation)`)
    }
  })
  await insertRecordings(tx, enterpriseId, fresh, events)
  for (const { audioId, transcript } of transcripts) {
    await attachTranscript(tx, enterpriseId, audioId, transcript, events)
  }
  const imported = fresh.length + transcripts.length
  return { imported, skipped: chunk.length - imported }
}

/** Groups lines into chunks of at most CHUNK_RECORDINGS and (unless one) CHUNK_BYTES. */
async function* chunks<T extends { size: number }>(
  entries: AsyncIterable<T>,
): AsyncGenerator<T[], void, undefined> {
  let chunk: T[] = []
  let size = 0
  for await (const entry of entries) {
    if (chunk.length > 0 && size + entry.size > CHUNK_BYTES) {
      yield chunk
      chunk = []
      size = 0
    }
    chunk.push(entry)
    size += entry.size
    if (chunk.length === CHUNK_RECORDINGS) {
      yield chunk
      chunk = []
      size = 0
    }
  }
  if (chunk.length > 0) yield chunk
}

function recordingsOf(chunk: readonly SpooledRecording[]): NewRecording[] {
  return chunk.map((entry) => entry.recording)
}

/**
 * Keeps the planner's statistics of the tables an import fills in step with it: each time the recordings
 * committed since the last ANALYZE pass what would have autovacuum analyze them (BASE + 10% of the rows
 * the table had), the recordings and their deliveries are analyzed, between two chunks. Until the statistics
 * count the new rows, a window query over the recordings was measured 30-50 times slower (165 ms against
 * 3-5 ms at 1,000,000 rows), and the push queue's statements, planned on an emptier table's counts, read
 * whole partial indexes instead of their rows by key while the import's deliveries drained (a settle of 15
 * deliveries: 9 ms instead of under 1 ms). A table whose lock another ANALYZE or VACUUM holds is skipped:
 * that one is bringing its statistics up to date.
 */
function statisticsKeeper(db: Database): (committed: number) => Promise<void> {
  let since = 0
  return async (committed) => {
    since += committed
    if (since <= ANALYZE_BASE) return
    const [table] = await db.query<{ rows: number }>(
      "SELECT greatest(reltuples, 0)::float8 AS rows FROM pg_class WHERE oid = 'recordings'::regclass",
    )
    if (since <= ANALYZE_BASE + 0.1 * (table?.rows ?? 0)) return
    since = 0
    await db.query('ANALYZE (SKIP_LOCKED) recordings, deliveries')
  }
}
const ANALYZE_BASE = 1000

/**
 * A refusal sent before the whole body arrived: the rest is not read, so the connection closes once
 * the answer is out (a client still sending gets the answer, then the connection ends).
 */
function closeAfterReply(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('connection', 'close')
  reply.raw.once('finish', () => request.raw.destroy())
}
