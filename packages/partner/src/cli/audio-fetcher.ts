import { mkdir } from 'node:fs/promises'
import type { EarshotClient } from '../client/earshot-client.js'
import type { CallbackOutbox } from '../outbox/callback-outbox.js'
import { eraseAudioFiles, hasAudioFile, saveAudio } from './audio-files.js'

export interface AudioFetcherOptions {
  client: EarshotClient
  directory: string
  log: (line: string) => void
  /** Aborting stops every download (their partial files are kept) and any later one. */
  signal?: AbortSignal | undefined
  /** Downloads at once; default 4. */
  concurrency?: number | undefined
  /** A download waiting for its push's answer starts anyway after this long (the answer may never go out). */
  answerGraceMs?: number | undefined
}

export interface FetchOptions {
  /** Only when the directory does not hold the recording's audio yet (a transcript added changes no audio). */
  ifMissing?: boolean | undefined
}

export interface AudioFetchCounts {
  fetched: number
  failed: number
}

interface Held {
  audioId: string
  timer: NodeJS.Timeout
  start: () => void
}

const DEFAULT_CONCURRENCY = 4
const DEFAULT_ANSWER_GRACE_MS = 10_000

/**
 * Fetches recordings' audio into a directory in the background, a few at once and one after another per
 * recording. A failed download is logged and counted, never thrown; a deleted recording's audio is removed
 * and never fetched again by this fetcher.
 */
export class AudioFetcher {
  readonly #options: AudioFetcherOptions
  readonly #stopping: AbortSignal
  readonly #concurrency: number
  /** The last step queued for each recording. */
  readonly #chains = new Map<string, Promise<void>>()
  readonly #running = new Map<string, AbortController>()
  /** Downloads waiting for their push's answer, by eventId. */
  readonly #held = new Map<string, Held>()
  readonly #deleted = new Set<string>()
  readonly #slotWaiters: (() => void)[] = []
  readonly #closer = new AbortController()
  #active = 0
  readonly counts: AudioFetchCounts = { fetched: 0, failed: 0 }

  constructor(options: AudioFetcherOptions) {
    this.#options = options
    this.#concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
    this.#stopping = options.signal
      ? AbortSignal.any([options.signal, this.#closer.signal])
      : this.#closer.signal
  }

  /** Queues the download of the recording's audio, from `link` when given (else from a fresh query). */
  fetch(audioId: string, link: string | undefined, options: FetchOptions = {}): void {
    void this.#chain(audioId, () => this.#withSlot(() => this.#download(audioId, link, options)))
  }

  /** Like fetch(), once answered(eventId) says the push's answer went out (or after the grace). */
  fetchAfterAnswer(
    eventId: string,
    audioId: string,
    link: string | undefined,
    options: FetchOptions = {},
  ): void {
    const timer = setTimeout(
      () => this.answered(eventId),
      this.#options.answerGraceMs ?? DEFAULT_ANSWER_GRACE_MS,
    )
    timer.unref()
    this.#held.set(eventId, { audioId, timer, start: () => this.fetch(audioId, link, options) })
  }

  answered(eventId: string): void {
    const held = this.#held.get(eventId)
    if (!held) return
    this.#held.delete(eventId)
    clearTimeout(held.timer)
    held.start()
  }

  /** The recording was deleted: its download is stopped and its audio files removed, durably. */
  async remove(audioId: string): Promise<void> {
    this.#deleted.add(audioId)
    for (const [eventId, held] of this.#held) {
      if (held.audioId === audioId) {
        clearTimeout(held.timer)
        this.#held.delete(eventId)
      }
    }
    this.#running.get(audioId)?.abort()
    await this.#chain(audioId, () => eraseAudioFiles(this.#options.directory, audioId))
  }

  /** Resolves once every download queued (not those still waiting for an answer) has ended. */
  async settled(): Promise<AudioFetchCounts> {
    while (this.#chains.size > 0) await Promise.all([...this.#chains.values()])
    return { ...this.counts }
  }

  /** Stops the downloads (their partial files stay) and drops those not started. */
  async close(): Promise<AudioFetchCounts> {
    this.#closer.abort()
    for (const held of this.#held.values()) clearTimeout(held.timer)
    this.#held.clear()
    return this.settled()
  }

  /** Runs `step` after the recording's earlier steps; its failure is the caller's, not the chain's. */
  #chain(audioId: string, step: () => Promise<void>): Promise<void> {
    const result = (this.#chains.get(audioId) ?? Promise.resolve()).then(step)
    const chained = result.catch(() => {})
    this.#chains.set(audioId, chained)
    void chained.then(() => {
      if (this.#chains.get(audioId) === chained) this.#chains.delete(audioId)
    })
    return result
  }

  async #withSlot(work: () => Promise<void>): Promise<void> {
    while (this.#active >= this.#concurrency) {
      await new Promise<void>((resolve) => this.#slotWaiters.push(resolve))
    }
    this.#active++
    try {
      await work()
    } finally {
      this.#active--
      this.#slotWaiters.shift()?.()
    }
  }

  async #download(audioId: string, link: string | undefined, options: FetchOptions): Promise<void> {
    const { client, directory, log } = this.#options
    if (this.#stopping.aborted || this.#deleted.has(audioId)) return
    if (options.ifMissing && (await hasAudioFile(directory, audioId))) return
    const controller = new AbortController()
    this.#running.set(audioId, controller)
    const signal = AbortSignal.any([controller.signal, this.#stopping])
    try {
      const saved = await saveAudio(client, directory, audioId, { link, signal })
      this.counts.fetched++
      log(`fetched the audio of ${audioId}: ${saved.bytes} bytes in ${saved.file}`)
    } catch (error) {
      if (signal.aborted) return
      this.counts.failed++
      log(`warning: could not fetch the audio of ${audioId}: ${(error as Error).message}`)
    } finally {
      this.#running.delete(audioId)
    }
  }
}

/** A fetcher into `directory`, which is made if missing. */
export async function openAudioFetcher(options: AudioFetcherOptions): Promise<AudioFetcher> {
  await mkdir(options.directory, { recursive: true })
  return new AudioFetcher(options)
}

/**
 * The outbox, also telling `onAnswered` of each push whose answer went out: the receiver calls
 * wake(eventId) then (PushAnswer.afterResponse), to release the push's receipt callback.
 */
export function observeAnswers(
  outbox: CallbackOutbox,
  onAnswered: (eventId: string) => void,
): CallbackOutbox {
  return {
    admit: (envelope) => outbox.admit(envelope),
    recordReceived: (event) => outbox.recordReceived(event),
    callbacks: (filter) => outbox.callbacks(filter),
    close: () => outbox.close(),
    wake(eventId) {
      outbox.wake(eventId)
      if (eventId !== undefined) onAnswered(eventId)
    },
  }
}
