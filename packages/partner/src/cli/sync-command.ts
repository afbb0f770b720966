import { join } from 'node:path'
import { ChangeKind } from '@earshot/protocol'
import { Command } from 'commander'
import type { ChangePage, EarshotClient } from '../client/earshot-client.js'
import { openChangeMirror, type SyncResult, syncChanges } from '../mirror/change-mirror.js'
import { type Database, openDatabase } from '../storage/database.js'
import { type AudioFetchCounts, type AudioFetcher, openAudioFetcher } from './audio-fetcher.js'
import { CommandFailure, positiveInteger, printJson, printLines, runWithClient } from './command-support.js'

interface SyncCommandOptions {
  data: string
  follow?: boolean
  size?: number
  json?: boolean
  audio?: string
}

/**
 * `earshot-partner sync --data DIR [--follow]`: keeps a mirror of the enterprise's
 * recordings in a PGlite in DIR/db current from the change feed. Each page is committed with the cursor
 * after it, so a sync stopped in any way (kill -9 included) resumes where the last page ended. Exits 0
 * once caught up; with --follow it polls on until SIGINT or SIGTERM, then exits 0.
 */
export function syncCommand(): Command {
  return new Command('sync')
    .description(
      'keep a local mirror of your recordings (DIR/db) current from the change feed; exits 0 once caught up',
    )
    .requiredOption('--data <dir>', 'the directory of the mirror database (DIR/db)')
    .option('--follow', 'once caught up, keep polling for new changes until SIGINT or SIGTERM')
    .option('--size <n>', 'changes per page, 1 to 100 (default 100)', positiveInteger('a page size'))
    .option(
      '--audio <dir>',
      "also fetch each mirrored recording's audio, verified, into DIR/<audioId>.<extension> (and remove " +
        'it once deleted); audio a sync could not fetch is fetched by the next',
    )
    .option(
      '--json',
      'print {"applied", "cursor", "lagSeconds"} as JSON at the end (with --audio also "audio")',
    )
    .action(async (options: SyncCommandOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, (client) => sync(client, options))
    })
}

async function sync(client: EarshotClient, options: SyncCommandOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const stopping = new AbortController()
  let stoppedBy: NodeJS.Signals | undefined
  const stop = (signal: NodeJS.Signals) => {
    stoppedBy ??= signal
    log(`${signal}: stopping`)
    stopping.abort()
  }
  const onSigint = () => stop('SIGINT')
  const onSigterm = () => stop('SIGTERM')
  process.once('SIGINT', onSigint)
  process.once('SIGTERM', onSigterm)
  try {
    const db = await openDatabase({ dataDir: join(options.data, 'db') })
    try {
      await syncMirror(db, client, options, { log, signal: stopping.signal, stoppedBy: () => stoppedBy })
    } finally {
      await db.close()
    }
  } finally {
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
  }
}

interface SyncRun {
  log: (line: string) => void
  signal: AbortSignal
  stoppedBy: () => NodeJS.Signals | undefined
}

/** Syncs the mirror in `db` (and with --audio the audio files), then reports how it went. */
async function syncMirror(
  db: Database,
  client: EarshotClient,
  options: SyncCommandOptions,
  { log, signal, stoppedBy }: SyncRun,
): Promise<void> {
  const mirror = await openChangeMirror(db, client.enterpriseId)
  const audio = options.audio
    ? await openAudioFetcher({ client, directory: options.audio, log, signal })
    : undefined
  // Audio a previous sync could not fetch (or that was never asked for) is fetched along.
  if (audio) await fetchMissingAudio(db, audio)
  let following = false
  let lagSeconds = 0
  let result: SyncResult
  try {
    result = await syncChanges({
      client,
      mirror,
      size: options.size,
      follow: Boolean(options.follow),
      signal,
      async onPage(page) {
        const last = page.items.at(-1)
        if (last) log(`applied ${changes(page.items.length)} through seq ${last.seq}`)
        if (audio) await fetchAudioOf(page, audio)
        if (page.hasMore) return
        lagSeconds = page.lagSeconds
        if (options.follow && !following) {
          following = true
          log(`caught up${behind(lagSeconds)}; following the change feed`)
        }
      },
      onRetry(error, waitMs) {
        log(`warning: ${(error as Error).message}; polling again in ${(waitMs / 1000).toFixed(1)} s`)
      },
    })
  } catch (error) {
    await audio?.close()
    throw error
  }
  const fetched = await audio?.close()
  if (!options.follow && !result.caughtUp) {
    throw new CommandFailure(
      `${stoppedBy() ?? 'stopped'} before catching up (applied ${changes(result.applied)}); ` +
        'run sync again to resume',
    )
  }
  await report(db, options, { ...result, lagSeconds, stoppedBy: stoppedBy(), audio: fetched })
}

/** The last line of a sync (or its JSON); exit code 1 when some audio could not be fetched. */
async function report(
  db: Database,
  options: SyncCommandOptions,
  outcome: SyncResult & { lagSeconds: number; stoppedBy?: NodeJS.Signals; audio?: AudioFetchCounts },
): Promise<void> {
  const { applied, cursor, lagSeconds, audio } = outcome
  if (options.json) {
    printJson({ applied, cursor, lagSeconds, audio })
  } else {
    const [count] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM mirror_recordings')
    printLines(
      `${outcome.stoppedBy ? 'Stopped' : `Caught up${behind(lagSeconds)}`}: applied ${changes(applied)}; ` +
        `the mirror holds ${count?.n ?? 0} ${count?.n === 1 ? 'recording' : 'recordings'}` +
        `${audio ? `; fetched ${audioFiles(audio.fetched)}` : ''}.`,
    )
  }
  if (audio && audio.failed > 0) {
    throw new CommandFailure(
      `could not fetch the audio of ${audio.failed} ${audio.failed === 1 ? 'recording' : 'recordings'} ` +
        '(see the warnings above); sync --audio fetches it on its next run',
    )
  }
}

/**
 * Queues the audio of every mirrored recording that has an audio part not in the directory yet, each from a
 * fresh link (the mirrored one has likely expired).
 */
async function fetchMissingAudio(db: Database, audio: AudioFetcher): Promise<void> {
  const rows = await db.query<{ audio_id: string }>(
    `SELECT audio_id FROM mirror_recordings WHERE coalesce(data->>'denoiseUrl', '') <> '' ORDER BY audio_id`,
  )
  for (const row of rows) audio.fetch(row.audio_id, undefined, { ifMissing: true })
}

/**
 * The audio of the page's recordings: removed for those deleted, fetched for the others that have an audio
 * part (again after a change that may have replaced it). Returns once every download ended.
 */
async function fetchAudioOf(page: ChangePage, audio: AudioFetcher): Promise<void> {
  const deleted = new Set(
    page.items.filter((item) => item.change === ChangeKind.DELETED).map((item) => item.audioId),
  )
  for (const audioId of deleted) await audio.remove(audioId)
  const last = new Map(page.items.map((item) => [item.audioId, item]))
  for (const { audioId, change, data } of last.values()) {
    if (deleted.has(audioId) || !data?.denoiseUrl) continue
    audio.fetch(audioId, data.denoiseUrl, { ifMissing: change === ChangeKind.TRANSCRIPT_ADDED })
  }
  await audio.settled()
}

const changes = (n: number) => `${n} ${n === 1 ? 'change' : 'changes'}`
const audioFiles = (n: number) => `${n} audio ${n === 1 ? 'file' : 'files'}`

/**
 * How far behind the feed may be: changes committed on the platform wait while an older transaction there
 * still runs (the feed's lagSeconds).
 */
const behind = (lagSeconds: number) =>
  lagSeconds >= 1
    ? ` with the feed (it may be up to ${Math.round(lagSeconds)} s behind: changes made on the platform wait while an older transaction there still runs)`
    : ''
