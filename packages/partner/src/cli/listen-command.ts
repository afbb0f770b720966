import { join } from 'node:path'
import { EVENT_TYPES, PushEventType } from '@earshot/protocol'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { EarshotClient } from '../client/earshot-client.js'
import { EarshotError } from '../client/errors.js'
import type { ReceiverLogger } from '../logging/receiver-logger.js'
import { openCallbackOutbox } from '../outbox/callback-outbox.js'
import { DEFAULT_PUSH_PATH } from '../receiver/push-exchange.js'
import { createPushReceiver, type PushReceiver } from '../receiver/push-receiver.js'
import {
  databaseRecordingStore,
  fileRecordingStore,
  type RecordingStore,
} from '../receiver/recording-store.js'
import { type Database, openDatabase } from '../storage/database.js'
import { observeAnswers, openAudioFetcher } from './audio-fetcher.js'
import { CommandFailure, type CredentialOptions, clientFor, fail, printLines } from './command-support.js'
import { type ReceiverParts, startListener } from './listener.js'
import { startedByNpm, stopRequest } from './stop-request.js'

interface ListenOptions {
  port: number
  data: string
  host: string
  path: string
  store: 'db' | 'files'
  audio?: string
}

interface ReceiverContext {
  client: EarshotClient
  secret: string
  keyVersion: number | undefined
  db: Database
  log: (line: string) => void
  /** Steps run in reverse order when the receiver closes. */
  cleanup: (() => Promise<unknown>)[]
}

/**
 * `earshot-partner listen --port P --data DIR [--audio AUDIO_DIR]`: receives pushes, stores each recording
 * event once (a PGlite in DIR/db, or with --store files one JSON file per event in DIR/recordings),
 * removes the recording again when the platform pushes its deletion, and confirms each push with the
 * receipt callback, durably: callbacks not yet confirmed survive a restart. With --audio it also fetches
 * the recordings' audio, in the background.
 */
export function listenCommand(): Command {
  return new Command('listen')
    .description(
      'receive pushes, store each recording once (remove it once deleted), confirm each with the callback',
    )
    .requiredOption('--port <port>', 'the port to listen on (0 picks a free one)', port)
    .requiredOption('--data <dir>', 'the directory for the receiver database (DIR/db) and stored files')
    .option('--host <host>', 'the address to listen on', '127.0.0.1')
    .option('--path <path>', 'the path the platform pushes to', DEFAULT_PUSH_PATH)
    .addOption(
      new Option(
        '--store <kind>',
        'db: a recordings table in DIR/db; files: DIR/recordings/<audioId>.<eventType>.json, the eventType ' +
          `one of ${EVENT_TYPES.join(', ')} (${PushEventType.UPDATED}: the recording as it is now)`,
      )
        .choices(['db', 'files'])
        .default('db'),
    )
    .option(
      '--audio <dir>',
      "also fetch each recording's audio, verified, into DIR/<audioId>.<extension> once its push is " +
        'answered (a failed download is logged; the push stays received), and remove it once deleted',
    )
    .action(async (options: ListenOptions, command: Command) => {
      try {
        await listen(options, command)
      } catch (error) {
        if (error instanceof EarshotError || error instanceof CommandFailure) return fail(error.message)
        if (isListenError(error))
          return fail(`cannot listen on ${options.host}:${options.port}: ${error.message}`)
        throw error
      }
    })
}

async function listen(options: ListenOptions, command: Command): Promise<void> {
  if (!options.path.startsWith('/')) throw new CommandFailure('--path must start with /')
  const client = clientFor(command)
  const { secret, keyVersion } = command.optsWithGlobals<CredentialOptions>()
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const stopped = stopRequest({ watchParent: startedByNpm() })
  const listener = await startListener(options, () =>
    openReceiverParts(options, { client, secret: secret as string, keyVersion, log }),
  )
  printLines(`listening on ${listener.url}`)
  try {
    log(`${await Promise.race([stopped, listener.failed])}: stopping`)
  } finally {
    await listener.stop()
  }
  log('stopped')
}

/** The database, then the store, the outbox and the receiver in it; closed in reverse order. */
async function openReceiverParts(
  options: ListenOptions,
  context: Omit<ReceiverContext, 'db' | 'cleanup'>,
): Promise<ReceiverParts> {
  const cleanup: (() => Promise<unknown>)[] = []
  const close = async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {})
  }
  try {
    const db = await openDatabase({ dataDir: join(options.data, 'db') })
    cleanup.push(() => db.close())
    const receiver = await openReceiver(options, { ...context, db, cleanup })
    return { handler: receiver.handler, close }
  } catch (error) {
    await close()
    throw error
  }
}

/**
 * The store, the outbox and the receiver, each added to `cleanup`. With --audio, each recording's audio is
 * fetched once its push was answered (never delaying the answer), and removed with the recording.
 */
async function openReceiver(options: ListenOptions, context: ReceiverContext): Promise<PushReceiver> {
  const { client, secret, keyVersion, db, log, cleanup } = context
  const logger = stderrLogger(log)
  const store = await storeFor(options, db)
  const outbox = await openCallbackOutbox({
    database: db,
    confirm: (audioId, options) => client.confirmReceipt(audioId, options),
    log: {
      ...logger,
      info: (details, message) => {
        const { audioId } = details as { audioId?: string }
        if (message === 'receipt confirmed') log(`confirmed ${audioId}`)
        else if (message === 'erasure confirmed') log(`confirmed the erasure of ${audioId}`)
      },
    },
  })
  cleanup.push(() => outbox.close())
  const audio = options.audio ? await openAudioFetcher({ client, directory: options.audio, log }) : undefined
  if (audio) cleanup.push(() => audio.close())
  return createPushReceiver({
    secret,
    keyVersion,
    outbox: audio ? observeAnswers(outbox, (eventId) => audio.answered(eventId)) : outbox,
    log: logger,
    onRecording: async (push) => {
      if (!(await store.save(push))) return log(`ignored ${push.audioId} ${push.eventType}: deleted since`)
      log(`stored ${push.audioId} ${push.eventType} (event ${push.eventId}) in ${store.describe(push)}`)
      if (audio && push.data.denoiseUrl) {
        const ifMissing = push.eventType === PushEventType.TRANSCRIPT_READY
        audio.fetchAfterAnswer(push.eventId, push.audioId, push.data.denoiseUrl, { ifMissing })
      }
    },
    onDeleted: async (deletion) => {
      await store.delete(deletion)
      await audio?.remove(deletion.audioId)
      log(`deleted ${deletion.audioId} (event ${deletion.eventId}) from ${store.describe(deletion)}`)
    },
  })
}

async function storeFor(options: ListenOptions, db: Database): Promise<RecordingStore> {
  return options.store === 'files'
    ? fileRecordingStore(join(options.data, 'recordings'))
    : databaseRecordingStore(db)
}

/** One line per warning or error on stderr: the message, then its details as key=value. */
function stderrLogger(log: (line: string) => void): ReceiverLogger {
  const line = (level: string) => (details: object, message: string) =>
    log(
      [
        `${level}: ${message}`,
        ...Object.entries(details).map(([key, value]) => `${key}=${JSON.stringify(value)}`),
      ].join(' '),
    )
  return { info: () => {}, warn: line('warning'), error: line('error') }
}

function port(raw: string): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) throw new InvalidArgumentError('a port is 0 to 65535')
  return Number(raw)
}

function isListenError(error: unknown): error is NodeJS.ErrnoException {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
}
