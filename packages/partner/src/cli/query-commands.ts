import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { isTranscriptData, type RecordingData, type RecordingFilter } from '@earshot/protocol'
import { Command } from 'commander'
import type { AudioPage } from '../client/earshot-client.js'
import {
  CommandFailure,
  makeFolderFor,
  positiveInteger,
  printJson,
  printLines,
  progressBar,
  runWithClient,
  table,
} from './command-support.js'

interface FilterOptions {
  audioId?: string
  deviceUid?: string
  startTime?: string
  endTime?: string
}

interface QueryOptions extends FilterOptions {
  page?: number
  size?: number
  json?: boolean
}

interface ExportOptions extends FilterOptions {
  out?: string
  progress?: boolean
  json?: boolean
}

/** Export reads pages of the largest size the contract allows. */
const EXPORT_PAGE_SIZE = 100
const MAX_TITLE_WIDTH = 40
const DURATION_HEADER = 'DURATION (s)'
const EXPORT_FORMAT_HELP = `
Each line is in the platform's import format (\`earshot recordings import\`), so an export can be imported
into another enterprise or platform as it is. The denoiseUrl of audio the platform stores is a signed link
that expires: to carry the audio itself over, download it (\`download\`) and upload it on the other side.`

/** `earshot-partner token [--json]`. */
export function tokenCommand(): Command {
  return new Command('token')
    .description('obtain an access token and print it')
    .option('--json', 'print {"accessToken", "expiresIn"} as JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const { accessToken, expiresIn } = await client.accessToken()
        if (options.json) return printJson({ accessToken, expiresIn })
        printLines(accessToken)
      })
    })
}

/** `earshot-partner query [filters] [--page] [--size] [--json]`. */
export function queryCommand(): Command {
  return withFilters(new Command('query'))
    .description('query recordings: one page, decrypted')
    .option('--page <n>', 'page number (default 1)', positiveInteger('a page number'))
    .option('--size <n>', 'rows per page, 1 to 100 (default 20)', positiveInteger('a page size'))
    .option('--json', 'print the decrypted list as JSON: {"specVersion", "page", "size", "total", "items"}')
    .action(async (options: QueryOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const page = await client.queryAudios(
          { ...filterOf(options), page: options.page, size: options.size },
          {},
        )
        if (options.json) return printJson(contractList(page))
        const pages = Math.max(1, Math.ceil(page.total / page.size))
        const footer = `page ${page.page} of ${pages}, total ${page.total}`
        if (page.items.length === 0) return printLines('No recordings on this page.', footer)
        const seconds = rightAligned(
          DURATION_HEADER,
          page.items.map(({ data }) => durationSeconds(data)),
        )
        const rows = page.items.map(({ audioId, data }, i) => [
          audioId,
          data.recordedAt,
          data.deviceUid,
          truncate(data.title, MAX_TITLE_WIDTH),
          seconds[i] as string,
          isTranscriptData(data) ? 'yes' : 'no',
        ])
        printLines(
          ...table(
            ['AUDIO ID', 'RECORDED AT (UTC)', 'DEVICE UID', 'TITLE', DURATION_HEADER, 'TRANSCRIPT'],
            rows,
          ),
          footer,
        )
      })
    })
}

/**
 * `earshot-partner export [filters] [--out FILE.jsonl]`: every matching recording, one JSON line each, in the
 * platform's import format.
 */
export function exportCommand(): Command {
  return withFilters(new Command('export'))
    .description(
      "write every matching recording as JSON Lines in the platform's import format to --out or stdout",
    )
    .addHelpText('after', EXPORT_FORMAT_HELP)
    .option('--out <file>', 'the JSON Lines file to write (replaced only once the export is complete)')
    .option('--progress', 'show a progress bar on stderr even when it is not a terminal')
    .option('--json', 'with --out, print {"exported": N} as JSON at the end')
    .action(async (options: ExportOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const output = options.out ? await openPartial(options.out) : undefined
        const bar =
          options.progress || process.stderr.isTTY
            ? await progressBar({
                format: 'exporting [{bar}] {percentage}% | {value}/{total}',
                hideCursor: true,
                noTTYOutput: true,
              })
            : undefined
        let started = false
        let exported = 0
        try {
          for await (const page of client.iterateAudios({ ...filterOf(options), size: EXPORT_PAGE_SIZE })) {
            if (!started) bar?.start(page.total, 0)
            else bar?.setTotal(page.total)
            started = true
            const lines = page.items.map((item) => `${JSON.stringify(importLine(item))}\n`)
            await write(output?.stream ?? process.stdout, lines.join(''))
            exported += page.items.length
            bar?.update(exported)
          }
          if (started) bar?.stop()
          await output?.commit()
        } catch (error) {
          if (started) bar?.stop()
          await output?.discard()
          throw error
        }
        const noun = exported === 1 ? 'recording' : 'recordings'
        if (!options.out) {
          // stdout holds the JSON Lines.
          process.stderr.write(`Exported ${exported} ${noun}.\n`)
        } else if (options.json) {
          printJson({ exported })
        } else {
          printLines(`Exported ${exported} ${noun} to ${options.out}.`)
        }
      })
    })
}

function withFilters(command: Command): Command {
  return command
    .option('--audio-id <audioId>', 'only this recording')
    .option('--device-uid <deviceUid>', 'only recordings of this device')
    .option(
      '--start-time <time>',
      'recorded at or after this ISO-8601 instant with an offset, e.g. 2026-01-01T00:00:00Z',
    )
    .option('--end-time <time>', 'recorded before this ISO-8601 instant with an offset')
}

function filterOf(options: FilterOptions): RecordingFilter {
  const { audioId, deviceUid, startTime, endTime } = options
  return { audioId, deviceUid, startTime, endTime }
}

/** Contract 2.4 exactly: the parsed sentences the client adds are left out. */
function contractList(page: AudioPage) {
  const { specVersion, page: number, size, total, items } = page
  return {
    specVersion,
    page: number,
    size,
    total,
    items: items.map(({ audioId, data }) => ({ audioId, data })),
  }
}

/** A recording as a line of the platform's import: the transcript as an object, its sentences parsed. */
export function importLine({ audioId, data, sentences }: AudioPage['items'][number]) {
  const { deviceUid, title, recordedAt, denoiseUrl, recordDuration } = data
  const audio = denoiseUrl ? { denoiseUrl, recordDuration } : {}
  if (!isTranscriptData(data)) return { audioId, deviceUid, title, recordedAt, ...audio }
  const { transcriptId, transcriptText, durationMs, wordsCount } = data
  const transcript = { transcriptId, transcriptText, sentences, durationMs, wordsCount }
  return { audioId, deviceUid, title, recordedAt, ...audio, transcript }
}

/**
 * A recording's duration in seconds, one decimal: the transcript's durationMs (set A), else the audio's
 * recordDuration (set B). Both are milliseconds, as the platform stores and shows them (its console, its
 * demo data); the contract names no unit for recordDuration.
 */
function durationSeconds(data: RecordingData): string {
  return ((isTranscriptData(data) ? data.durationMs : data.recordDuration) / 1000).toFixed(1)
}

/** Numbers right-aligned in a column under `header`, so that their decimal points line up. */
function rightAligned(header: string, values: string[]): string[] {
  const width = Math.max(header.length, ...values.map((value) => value.length))
  return values.map((value) => value.padStart(width))
}

function truncate(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}

async function write(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain')
}

/** A file written beside its destination and renamed over it only once complete. */
async function openPartial(path: string) {
  await makeFolderFor(path, '--out')
  const partial = `${path}.partial-${process.pid}`
  const stream = createWriteStream(partial)
  // A write error also fails finished() in commit(); this keeps it from crashing the process first.
  stream.on('error', () => {})
  const refuse = (error: unknown) => new CommandFailure(`cannot write ${path}: ${(error as Error).message}`)
  try {
    await once(stream, 'open')
  } catch (error) {
    throw refuse(error)
  }
  return {
    stream,
    async commit() {
      try {
        stream.end()
        await finished(stream)
        await rename(partial, path)
      } catch (error) {
        await rm(partial, { force: true })
        throw refuse(error)
      }
    },
    async discard() {
      stream.destroy()
      await rm(partial, { force: true })
    },
  }
}
