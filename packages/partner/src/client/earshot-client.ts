import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  AccessToken,
  CallbackPlaintext,
  ChangesRequest as ChangesRequestMessage,
  type EnvelopeKey,
  isJsonObject,
  type JsonObject,
  loadKey,
  type MessageParser,
  messageParser,
  open,
  PartnerOperation,
  RecordingFilter,
  type SealedOperation,
  type SealedOperationId,
  type SealedPlaintextOf,
  type SealedResultOf,
  seal,
  sealedOperation,
} from '@earshot/protocol'
import pRetry from 'p-retry'
import { type DownloadAudioOptions, type DownloadedAudio, downloadRecordingAudio } from './audio-download.js'
import type {
  AccessTokenInfo,
  AudioPage,
  ChangePage,
  ChangesRequest,
  EarshotClientOptions,
  RequestOptions,
} from './client-types.js'
import { credentialsFromEnv } from './credentials-from-env.js'
import { EarshotApiError, EarshotConfigError, EarshotResponseError } from './errors.js'
import {
  checkBaseUrl,
  checkFilter,
  checkFunction,
  checkMessage,
  checkPositiveInteger,
  checkTimeout,
  withoutUndefined,
} from './options-check.js'
import { audioPageOf, changePageOf } from './pages.js'
import { postAttempt } from './post-attempt.js'
import { isRetryable, isTokenRefusal, type Success, untilAborted } from './reply.js'

export type { DownloadAudioOptions, DownloadedAudio, DownloadProgress } from './audio-download.js'
export type {
  AccessTokenInfo,
  AudioItem,
  AudioPage,
  ChangeItem,
  ChangePage,
  ChangesRequest,
  EarshotClientOptions,
  RequestOptions,
} from './client-types.js'
export { isRetryable } from './reply.js'

// The partner API's paths, from the contracts the platform serves them by.
const TOKEN_PATH = PartnerOperation.issueToken.path
const AUDIOS_PATH = PartnerOperation.queryRecordings.path
const CALLBACK_PATH = PartnerOperation.confirmReceipt.path
const CHANGES_PATH = PartnerOperation.readChanges.path

const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_RETRIES = 3
const MAX_RETRIES = 100
/** A cached token is renewed this long before it expires (or at half its life when that is shorter). */
const RENEW_BEFORE_MS = 5 * 60_000
const BACKOFF = { factor: 2, minTimeout: 250, maxTimeout: 5_000, randomize: true }

interface CachedToken {
  info: AccessTokenInfo
  renewAt: number
}

/**
 * A client of the partner API: tokens, the recording query, the change feed and the receipt callback.
 * Every request is sealed afresh, transient failures are retried with backoff, and the token is reused
 * until shortly before it expires.
 */
export class EarshotClient {
  readonly baseUrl: string
  readonly enterpriseId: number
  readonly keyVersion: number
  readonly #key: EnvelopeKey
  readonly #timeoutMs: number
  readonly #retries: number
  readonly #fetch: typeof fetch
  readonly #clock: () => number
  readonly #sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>
  #token: CachedToken | undefined
  #tokenRequest: Promise<CachedToken> | undefined

  constructor(options: EarshotClientOptions) {
    if (!isJsonObject(options)) throw new EarshotConfigError('EarshotClient options must be an object')
    this.baseUrl = checkBaseUrl(options.baseUrl)
    this.enterpriseId = checkPositiveInteger('enterpriseId', options.enterpriseId)
    this.keyVersion = checkPositiveInteger('keyVersion', options.keyVersion)
    try {
      this.#key = loadKey(options.secret)
    } catch (error) {
      throw new EarshotConfigError(`secret: ${(error as Error).message}`, { cause: error })
    }
    this.#timeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    const retries = options.retries ?? DEFAULT_RETRIES
    if (!Number.isSafeInteger(retries) || retries < 0 || retries > MAX_RETRIES) {
      throw new EarshotConfigError(`retries must be an integer from 0 to ${MAX_RETRIES}; got ${retries}`)
    }
    this.#retries = retries
    this.#fetch = checkFunction('fetch', options.fetch) ?? ((input, init) => globalThis.fetch(input, init))
    this.#clock = checkFunction('clock', options.clock) ?? Date.now
    this.#sleep =
      checkFunction('sleep', options.sleep) ?? ((ms, signal) => sleep(ms, undefined, signal && { signal }))
  }

  /**
   * A client with the credentials of EARSHOT_BASE_URL (default http://127.0.0.1:8080),
   * EARSHOT_ENTERPRISE_ID, EARSHOT_KEY_VERSION (default 1) and EARSHOT_SECRET, and `options` besides.
   */
  static fromEnv(
    env: NodeJS.ProcessEnv = process.env,
    options: Omit<EarshotClientOptions, 'baseUrl' | 'enterpriseId' | 'keyVersion' | 'secret'> = {},
  ): EarshotClient {
    return new EarshotClient({ ...options, ...credentialsFromEnv(env) })
  }

  /** A bearer token: the cached one while it is fresh, else a new one (one request for all callers). */
  async token(options: { signal?: AbortSignal } = {}): Promise<string> {
    return (await this.accessToken(options)).accessToken
  }

  /** Like token(), with the token's validity. */
  accessToken(options: { signal?: AbortSignal } = {}): Promise<AccessTokenInfo> {
    const { signal } = options
    if (signal?.aborted) return Promise.reject(signal.reason)
    const cached = this.#token
    if (cached && this.#clock() < cached.renewAt) return Promise.resolve({ ...cached.info })
    // The shared request is not tied to any caller's signal: one caller giving up must not fail the rest.
    this.#tokenRequest ??= this.#requestToken().finally(() => {
      this.#tokenRequest = undefined
    })
    return untilAborted(this.#tokenRequest, signal).then((token) => ({ ...token.info }))
  }

  /** One page of recordings matching the filter; the filter is validated before anything is sent. */
  async queryAudios(filter: RecordingFilter = {}, options: RequestOptions = {}): Promise<AudioPage> {
    const plaintext = checkFilter(filter)
    const eventId = randomUUID()
    const reply = await this.#authorized(AUDIOS_PATH, eventId, plaintext, options)
    return this.#openList(reply, eventId)
  }

  /** Every page from `filter.page` (default 1) until all `total` matching recordings were seen. */
  async *iterateAudios(
    filter: RecordingFilter = {},
    options: RequestOptions = {},
  ): AsyncGenerator<AudioPage> {
    let page = RecordingFilter.parse(checkFilter(filter)).page
    for (;;) {
      const result = await this.queryAudios({ ...filter, page }, options)
      yield result
      if (result.items.length === 0 || result.page * result.size >= result.total) return
      page = result.page + 1
    }
  }

  /** One page of the change feed after `request.cursor` (from the beginning without one). */
  async changes(request: ChangesRequest = {}, options: RequestOptions = {}): Promise<ChangePage> {
    const plaintext = checkMessage(ChangesRequestMessage, withoutUndefined(request))
    const eventId = randomUUID()
    const reply = await this.#authorized(CHANGES_PATH, eventId, plaintext, options)
    return changePageOf(this.#openData(reply, eventId, 'change feed'), reply.httpStatus)
  }

  /**
   * Every page of the change feed from `request.cursor` (the beginning without one), following
   * nextCursor until hasMore is false: the last page's nextCursor is where later changes will start.
   */
  async *iterateChanges(
    request: ChangesRequest = {},
    options: RequestOptions = {},
  ): AsyncGenerator<ChangePage> {
    let cursor = request.cursor
    for (;;) {
      const page = await this.changes({ cursor, size: request.size }, options)
      yield page
      if (!page.hasMore) return
      cursor = page.nextCursor
    }
  }

  /** Tells the platform a pushed recording was received; repeating it is harmless. */
  async confirmReceipt(audioId: string, options: RequestOptions = {}): Promise<void> {
    const plaintext = checkMessage(CallbackPlaintext, { audioId })
    await this.#authorized(CALLBACK_PATH, randomUUID(), plaintext, options)
  }

  /**
   * Any sealed operation of the partner API by its operationId, its plaintext and its answer's data typed
   * and checked by the operation's contract, with the token, retries and sealing of every call: how a route
   * newer than this client's methods is called. `client.call('confirmReceipt', { audioId })` is
   * `confirmReceipt(audioId)`.
   */
  async call<Id extends SealedOperationId>(
    operationId: Id,
    plaintext: SealedPlaintextOf<Id>,
    options: RequestOptions = {},
  ): Promise<SealedResultOf<Id>> {
    const operation = sealedOperation(operationId)
    const checked = checkMessage(parserOf(operation.plaintext), withoutUndefined(plaintext as JsonObject))
    const eventId = randomUUID()
    const reply = await this.#authorized(operation.path, eventId, checked, options)
    if (operation.result === null) return undefined as SealedResultOf<Id>
    const data = operation.sealedResult ? this.#openData(reply, eventId, operationId) : reply.data
    try {
      return parserOf(operation.result).parse(data) as SealedResultOf<Id>
    } catch (error) {
      throw new EarshotResponseError(
        `the ${operationId} response data is not what its contract says: ${(error as Error).message}`,
        reply.httpStatus,
        { cause: error },
      )
    }
  }

  /**
   * Downloads the recording's audio to `filePath`: queries the recording for its `denoiseUrl` and streams
   * it into `filePath + '.part'`, hashing it on the way. A cut or stalled connection is resumed where it
   * stopped (`Range` with `If-Range`: a changed file starts over), retried like the other calls
   * (`retries`, and `timeoutMs` as the longest wait for a byte); a link refused with 403 (expired) is
   * replaced by a fresh one from a new query. The file's SHA-256 is checked against the link's
   * `Repr-Digest`, and the `.part` file is made durable and renamed to `filePath`. An aborted download
   * keeps the `.part` file (and its ETag in `filePath + '.part.etag'`): the next call resumes it.
   *
   * Rejects with EarshotApiError 4040 when the recording is gone (not in the query, or the link answers
   * 404: the `.part` file is then removed), EarshotNoAudioError when it has no audio part, and
   * EarshotDigestMismatchError (`.part` removed) when the bytes are not the file the link stated. A link
   * that is not Earshot's (no Repr-Digest) is simply downloaded: `verified` is then false.
   */
  downloadAudio(
    audioId: string,
    filePath: string,
    options: DownloadAudioOptions = {},
  ): Promise<DownloadedAudio> {
    return downloadRecordingAudio(this, audioId, filePath, {
      ...options,
      fetch: this.#fetch,
      retries: this.#retries,
      idleTimeoutMs: this.#timeoutMs,
    })
  }

  async #requestToken(): Promise<CachedToken> {
    const eventId = randomUUID()
    const requestedAt = this.#clock()
    const reply = await this.#withRetries({}, () =>
      this.#post(
        TOKEN_PATH,
        () => ({ ...this.#seal(eventId, {}), enterpriseId: this.enterpriseId }),
        undefined,
        {},
      ),
    )
    let token: AccessToken
    try {
      token = AccessToken.parse(reply.data)
    } catch (error) {
      throw new EarshotResponseError(
        `the token response data is not an access token {accessToken, expiresIn, tokenType}: ${(error as Error).message}`,
        reply.httpStatus,
        { cause: error },
      )
    }
    const lifetimeMs = token.expiresIn * 1000
    const info = {
      accessToken: token.accessToken,
      expiresIn: token.expiresIn,
      expiresAt: requestedAt + lifetimeMs,
    }
    this.#token = { info, renewAt: info.expiresAt - Math.min(RENEW_BEFORE_MS, lifetimeMs / 2) }
    return this.#token
  }

  /** The request sealed now, with issuedAt: replayed later than the platform's max age, it is refused. */
  #seal(eventId: string, plaintext: JsonObject) {
    const issuedAt = Math.floor(this.#clock() / 1000)
    return seal(this.#key, this.keyVersion, eventId, { ...plaintext, issuedAt })
  }

  /** A request with the bearer token; refused as 4010/4011, it is sent once more with a new token. */
  async #authorized(path: string, eventId: string, plaintext: JsonObject, options: RequestOptions) {
    checkTimeout(options.timeoutMs ?? this.#timeoutMs)
    const send = (token: string) =>
      this.#withRetries(options, () => this.#post(path, () => this.#seal(eventId, plaintext), token, options))
    const token = await this.token(options)
    try {
      return await send(token)
    } catch (error) {
      if (!isTokenRefusal(error)) throw error
      // Another caller may already have replaced it; only the token that was refused is dropped.
      if (this.#token?.info.accessToken === token) this.#token = undefined
      return send(await this.token(options))
    }
  }

  async #withRetries(options: RequestOptions, attempt: () => Promise<Success>): Promise<Success> {
    const { signal } = options
    let last: unknown
    try {
      return await pRetry(
        async () => {
          try {
            return await attempt()
          } catch (error) {
            last = error
            throw error
          }
        },
        {
          ...BACKOFF,
          retries: this.#retries,
          ...(signal && { signal }),
          shouldRetry: (error) => isRetryable(error),
          onFailedAttempt: async (error) => {
            if (error.retriesLeft > 0 && isRetryable(error) && error instanceof EarshotApiError) {
              const seconds = error.retryAfterSeconds ?? 0
              if (seconds > 0) await this.#sleep(seconds * 1000, signal)
            }
          },
        },
      )
    } catch (error) {
      // p-retry reports the most frequent error; the last one is the one to report.
      throw signal?.aborted ? signal.reason : (last ?? error)
    }
  }

  /** One HTTP attempt: the body is built (so sealed) anew for every attempt. */
  #post(path: string, body: () => object, token: string | undefined, options: RequestOptions) {
    return postAttempt(
      { baseUrl: this.baseUrl, fetch: this.#fetch, timeoutMs: this.#timeoutMs },
      path,
      body,
      token,
      options,
    )
  }

  /** The response data opened: sealed with our key, answering this very request. */
  #openData(reply: Success, eventId: string, what: string): unknown {
    const refuse = (why: string, cause?: unknown) =>
      new EarshotResponseError(`the ${what} response data ${why}`, reply.httpStatus, { cause })
    let opened: ReturnType<typeof open>
    try {
      opened = open(reply.data, this.#key)
    } catch (error) {
      throw refuse(`cannot be opened: ${(error as Error).message}`, error)
    }
    if (opened.envelope.eventId !== eventId || opened.envelope.keyVersion !== this.keyVersion) {
      throw refuse('answers another request: its eventId or keyVersion is not the request’s')
    }
    return opened.plaintext
  }

  #openList(reply: Success, eventId: string): AudioPage {
    return audioPageOf(this.#openData(reply, eventId, 'query'), reply.httpStatus)
  }
}

type Schema = SealedOperation['plaintext']
const parsers = new WeakMap<Schema, MessageParser<unknown>>()

/** One parser per schema, compiled when first used. */
function parserOf(schema: Schema): MessageParser<unknown> {
  const known = parsers.get(schema)
  if (known) return known
  const parser = messageParser(schema)
  parsers.set(schema, parser)
  return parser
}
