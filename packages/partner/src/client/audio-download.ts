/**
 * Downloading a recording's audio from its `denoiseUrl`: streamed to a `.part` file and hashed on the way,
 * resumed where a cut connection left it, verified against the link's `Repr-Digest`, then renamed into
 * place. The HTTP part (downloadFromLink) takes a function giving a fresh link, for a link that expired.
 */
import { writeFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { type RecordingFilter, ResponseCode } from '@earshot/protocol'
import pRetry from 'p-retry'
import type { AudioPage, RequestOptions } from './client-types.js'
import {
  EarshotApiError,
  EarshotNetworkError,
  EarshotNoAudioError,
  EarshotResponseError,
  EarshotTimeoutError,
} from './errors.js'
import {
  contentLengthOf,
  contentRangeOf,
  contentTypeOf,
  reprDigestOf,
  strongEtagOf,
} from './media-headers.js'
import {
  type AudioDestination,
  append,
  type DownloadedAudio,
  finish,
  openTransfer,
  removePartial,
  restart,
  type Transfer,
} from './partial-file.js'

export type { AudioDestination, DownloadedAudio }

import { connectionDetail, hostOf, isRetryable, readReply } from './reply.js'

export interface DownloadProgress {
  /** Bytes of the file on disk so far (those kept from an earlier attempt included). */
  bytes: number
  /** The file's size, once the link said it. */
  total: number | undefined
}

export interface DownloadAudioOptions {
  /** Aborting stops the download and its retries; the `.part` file is kept for a later call to resume. */
  signal?: AbortSignal | undefined
  /** After each chunk written. */
  onProgress?: ((progress: DownloadProgress) => void) | undefined
}

export interface LinkDownloadOptions extends DownloadAudioOptions {
  /** A new link to the same audio, asked for when the link is refused with HTTP 403 (e.g. expired). */
  freshLink(): Promise<string>
  fetch?: typeof fetch | undefined
  /** Retries after a transient failure (a cut connection, a stall, 5xx, 4290); default 3. */
  retries?: number | undefined
  /** An attempt is abandoned when no byte arrives for this long; default 10 s. */
  idleTimeoutMs?: number | undefined
}

/** The client's query, all a download needs of the client. */
export interface RecordingQuery {
  queryAudios(filter: RecordingFilter, options: RequestOptions): Promise<AudioPage>
}

interface Settings {
  freshLink: () => Promise<string>
  fetch: typeof fetch
  retries: number
  idleTimeoutMs: number
  signal: AbortSignal | undefined
  onProgress: ((progress: DownloadProgress) => void) | undefined
}

const BACKOFF = { factor: 2, minTimeout: 250, maxTimeout: 5_000, randomize: true }
const DEFAULT_RETRIES = 3
const DEFAULT_IDLE_TIMEOUT_MS = 10_000

/**
 * Queries the recording for its audio link and downloads it to `filePath` (see EarshotClient.downloadAudio).
 */
export async function downloadRecordingAudio(
  recordings: RecordingQuery,
  audioId: string,
  filePath: string,
  options: Omit<LinkDownloadOptions, 'freshLink'>,
): Promise<DownloadedAudio> {
  const freshLink = () => audioLinkOf(recordings, audioId, options.signal)
  const destination = { partPath: `${filePath}.part`, finalPath: () => filePath }
  const { file: _file, ...downloaded } = await downloadFromLink(undefined, destination, {
    ...options,
    freshLink,
  })
  return downloaded
}

/**
 * The recording's `denoiseUrl`, as a query answers it now: EarshotApiError 4040 when the query does not
 * have the recording, EarshotNoAudioError when it has no audio part.
 */
export async function audioLinkOf(
  recordings: RecordingQuery,
  audioId: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const page = await recordings.queryAudios({ audioId }, signal ? { signal } : {})
  const item = page.items.find((each) => each.audioId === audioId)
  if (!item) {
    throw new EarshotApiError({
      code: ResponseCode.NOT_FOUND,
      msg: `the query has no recording ${audioId} (deleted, or not of your enterprise)`,
    })
  }
  if (!item.data.denoiseUrl) throw new EarshotNoAudioError(audioId)
  return item.data.denoiseUrl
}

/**
 * Downloads `link` (without one, freshLink's) to `destination.partPath`, resuming from that file when the
 * ETag kept beside it (`<partPath>.etag`) still matches, then verifies it against Repr-Digest (when the link
 * states one) and renames it to `destination.finalPath(contentType)`. When the audio is gone (404, 4040, no
 * audio part) or the digest does not match, the partial file is removed.
 */
export async function downloadFromLink(
  link: string | undefined,
  destination: AudioDestination,
  options: LinkDownloadOptions,
): Promise<DownloadedAudio & { file: string }> {
  const settings = settingsOf(options)
  settings.signal?.throwIfAborted()
  let transfer: Transfer | undefined
  try {
    const first = link === undefined ? await settings.freshLink() : checkLink(link)
    transfer = await openTransfer(first, destination.partPath)
    await transferWithRetries(transfer, settings)
  } catch (error) {
    await transfer?.file.close()
    if (isGone(error)) await removePartial(destination.partPath)
    throw error
  }
  return finish(transfer, destination)
}

function settingsOf(options: LinkDownloadOptions): Settings {
  return {
    freshLink: async () => checkLink(await options.freshLink()),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    retries: options.retries ?? DEFAULT_RETRIES,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    signal: options.signal,
    onProgress: options.onProgress,
  }
}

function checkLink(link: string): string {
  if (!URL.canParse(link) || !/^https?:$/.test(new URL(link).protocol)) {
    throw new EarshotResponseError(`the audio link is not an http(s) URL: ${JSON.stringify(link)}`, 200)
  }
  return link
}

/** The part file opened for appending, with what it holds when an ETag was kept for it. */
/** Refusals after which the audio will never come from this link nor a fresh one. */
function isGone(error: unknown): boolean {
  return (
    (error instanceof EarshotApiError && error.code === ResponseCode.NOT_FOUND) ||
    (error instanceof EarshotResponseError && error.httpStatus === 404) ||
    error instanceof EarshotNoAudioError
  )
}

/** A failure another attempt may not meet; a plain 5xx too, as external links answer them. */
function isTransient(error: unknown): boolean {
  return isRetryable(error) || (error instanceof EarshotResponseError && error.httpStatus >= 500)
}

async function transferWithRetries(transfer: Transfer, settings: Settings): Promise<void> {
  const { signal } = settings
  let running: Promise<void> | undefined
  let last: unknown
  try {
    await pRetry(
      async () => {
        running = attempt(transfer, settings)
        try {
          await running
        } catch (error) {
          last = error
          throw error
        }
      },
      {
        ...BACKOFF,
        retries: settings.retries,
        ...(signal && { signal }),
        shouldRetry: (error) => isTransient(error),
        onFailedAttempt: async (error) => {
          const seconds = error instanceof EarshotApiError ? (error.retryAfterSeconds ?? 0) : 0
          if (error.retriesLeft > 0 && isTransient(error) && seconds > 0) {
            await sleep(seconds * 1000, undefined, signal && { signal })
          }
        },
      },
    )
  } catch (error) {
    // p-retry gives up at once on an abort: the attempt still writing must end before the file is closed.
    await running?.catch(() => {})
    throw signal?.aborted ? signal.reason : (last ?? error)
  }
}

/** One request, and its body appended to the part file. */
async function attempt(transfer: Transfer, settings: Settings): Promise<void> {
  const exchange = startExchange(settings.signal, settings.idleTimeoutMs)
  try {
    const response = await openResponse(transfer, settings, exchange)
    await receiveBody(transfer, response, settings, exchange)
  } finally {
    exchange.dispose()
  }
}

/**
 * Requests what is missing until an answer has bytes to append: from the beginning when the link cannot go
 * on from what is had, with a fresh link when it is refused with 403.
 */
async function openResponse(transfer: Transfer, settings: Settings, exchange: Exchange): Promise<Response> {
  for (;;) {
    // Asking for a fresh link or truncating the file is no stall of the link.
    exchange.touch()
    const response = await request(transfer, settings.fetch, exchange)
    if (response.status === 200 || (response.status === 206 && continues(transfer, response))) {
      await accept(transfer, response)
      return response
    }
    if ((response.status === 206 || response.status === 416) && transfer.have > 0) {
      await response.body?.cancel().catch(() => {})
      await restart(transfer)
      continue
    }
    const refusal = await refusalOf(response, exchange)
    if (response.status !== 403 || !transfer.mayRenewLink) throw refusal
    transfer.link = await settings.freshLink()
    transfer.mayRenewLink = false
  }
}

async function request(transfer: Transfer, fetchImpl: typeof fetch, exchange: Exchange): Promise<Response> {
  // Decoded content would not match the ranges and digest, which are of the stored bytes.
  const headers: Record<string, string> = { 'accept-encoding': 'identity' }
  if (transfer.have > 0 && transfer.etag !== undefined) {
    headers.range = `bytes=${transfer.have}-`
    headers['if-range'] = transfer.etag
  }
  try {
    return await fetchImpl(transfer.link, { headers, signal: exchange.signal })
  } catch (error) {
    throw exchange.failure(error, transfer.link, 'connect')
  }
}

/** A 206 goes on exactly from the bytes had, of the same file. */
function continues(transfer: Transfer, response: Response): boolean {
  const range = contentRangeOf(response.headers)
  const etag = strongEtagOf(response.headers)
  return range?.start === transfer.have && (etag === undefined || etag === transfer.etag)
}

/** Takes the answer's description of the file; a whole file (200) replaces the bytes had. */
async function accept(transfer: Transfer, response: Response): Promise<void> {
  const partial = response.status === 206
  if (!partial) await restart(transfer)
  else if (transfer.have > 0) transfer.resumed++
  const etag = strongEtagOf(response.headers)
  if (transfer.etag === undefined && etag !== undefined) {
    transfer.etag = etag
    await writeFile(transfer.etagPath, etag)
  }
  transfer.total = partial ? contentRangeOf(response.headers)?.total : contentLengthOf(response.headers)
  transfer.digest = reprDigestOf(response) ?? (partial ? transfer.digest : undefined)
  transfer.contentType = contentTypeOf(response.headers)
}

/** The refusal a non-2xx answer carries: EarshotApiError for an Earshot body, else EarshotResponseError. */
async function refusalOf(response: Response, exchange: Exchange): Promise<Error> {
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    return exchange.failure(error, response.url, 'read')
  }
  try {
    readReply(response.status, response.headers, text)
  } catch (error) {
    return error as Error
  }
  return new EarshotResponseError(`the audio link answered HTTP ${response.status}`, response.status)
}

async function receiveBody(
  transfer: Transfer,
  response: Response,
  settings: Settings,
  exchange: Exchange,
): Promise<void> {
  const reader = response.body?.getReader()
  // No body at all: an empty file, or one short of what was announced (checked below).
  try {
    while (reader) {
      const chunk = await reader.read().catch((error: unknown) => {
        throw exchange.failure(error, transfer.link, 'read')
      })
      if (chunk.done) break
      exchange.touch()
      await append(transfer, chunk.value)
      settings.onProgress?.({ bytes: transfer.have, total: transfer.total })
    }
  } finally {
    await reader?.cancel().catch(() => {})
  }
  if (transfer.total !== undefined && transfer.have !== transfer.total) {
    throw new EarshotNetworkError(
      `the audio link's answer ended after ${transfer.have} of ${transfer.total} bytes`,
    )
  }
}

type Exchange = ReturnType<typeof startExchange>

/** One attempt's abort signal: the caller's, or no byte for `idleTimeoutMs`. */
function startExchange(signal: AbortSignal | undefined, idleTimeoutMs: number) {
  const controller = new AbortController()
  let timedOut = false
  let timer: NodeJS.Timeout | undefined
  const touch = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, idleTimeoutMs)
  }
  const onAbort = () => controller.abort(signal?.reason)
  if (signal?.aborted) onAbort()
  else signal?.addEventListener('abort', onAbort, { once: true })
  touch()
  return {
    signal: controller.signal,
    touch,
    /** What a failed request or read of `link` is reported as: naming its host. */
    failure(error: unknown, link: string, phase: 'connect' | 'read'): Error {
      if (signal?.aborted) return signal.reason
      if (timedOut) return new EarshotTimeoutError(idleTimeoutMs, { cause: error })
      const what = phase === 'connect' ? 'cannot reach' : 'lost the connection to'
      return new EarshotNetworkError(
        `the audio download failed: ${what} ${hostOf(link)} (${connectionDetail(error)})`,
        { cause: error },
      )
    },
    dispose() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    },
  }
}
