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
  open,
  PartnerOperation,
  RecordingFilter,
  type SealedOperationId,
  type SealedPlaintextOf,
  type SealedResultOf,
  seal,
  sealedOperation,
} from '@earshot/protocol'
import { type DownloadAudioOptions, type DownloadedAudio, downloadRecordingAudio } from './audio-download.js'
import type {
  AccessTokenInfo,
  AudioPage,
  ChangePage,
  ChangesRequest,
  ConfirmOptions,
  EarshotClientOptions,
  RequestOptions,
} from './client-types.js'
import { credentialsFromEnv } from './credentials-from-env.js'
import { EarshotConfigError, EarshotResponseError } from './errors.js'
import { IntegrationCalls } from './integration-calls.js'
import {
  checkBaseUrl,
  checkFilter,
  checkFunction,
  checkMessage,
  checkPositiveInteger,
  checkTimeout,
  parserOf,
  withoutUndefined,
} from './options-check.js'
import { audioPageOf, changePageOf } from './pages.js'
import { postAttempt } from './post-attempt.js'
import { isRetryable, isTokenRefusal, isUnacted, type Success, untilAborted } from './reply.js'
import { type Retryable, withRetries } from './retries.js'

export type { DownloadAudioOptions, DownloadedAudio, DownloadProgress } from './audio-download.js'
export type {
  AccessTokenInfo,
  AudioItem,
  AudioPage,
  ChangeItem,
  ChangePage,
  ChangesRequest,
  ConfirmOptions,
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

interface CachedToken {
  info: AccessTokenInfo
  renewAt: number
}

/** The key requests are sealed with; replaced as a whole when the key is rotated. */
interface SealingKey {
  key: EnvelopeKey
  keyVersion: number
}

/** An answer, with the key its request was sealed with: the key its data is sealed with. */
type Answer = Success & { sealedWith: SealingKey }

/**
 * A client of the partner API: tokens, the recording query, the change feed, the receipt callback, and
 * the calls that manage the partner's integration (IntegrationCalls). Every request is sealed afresh,
 * transient failures are retried with backoff, and the token is reused until shortly before it expires.
 */
export class EarshotClient extends IntegrationCalls {
  readonly baseUrl: string
  readonly enterpriseId: number
  #sealing: SealingKey
  readonly #timeoutMs: number
  readonly #retries: number
  readonly #fetch: typeof fetch
  readonly #clock: () => number
  readonly #sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>
  #token: CachedToken | undefined
  #tokenRequest: Promise<CachedToken> | undefined

  constructor(options: EarshotClientOptions) {
    super()
    if (!isJsonObject(options)) throw new EarshotConfigError('EarshotClient options must be an object')
    this.baseUrl = checkBaseUrl(options.baseUrl)
    this.enterpriseId = checkPositiveInteger('enterpriseId', options.enterpriseId)
    const keyVersion = checkPositiveInteger('keyVersion', options.keyVersion)
    try {
      this.#sealing = { key: loadKey(options.secret), keyVersion }
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

  /** The keyVersion requests are sealed with: the one given, or the newest of rotateKey(). */
  get keyVersion(): number {
    return this.#sealing.keyVersion
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
    return audioPageOf(this.#openData(reply, eventId, 'query'), reply.httpStatus)
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

  /** Tells the platform a pushed recording was received; harmless to repeat. With erased: confirmErasure. */
  async confirmReceipt(audioId: string, { erased, ...options }: ConfirmOptions = {}): Promise<void> {
    const plaintext = checkMessage(CallbackPlaintext, erased ? { audioId, erased } : { audioId })
    await this.#authorized(CALLBACK_PATH, randomUUID(), plaintext, options)
  }

  /** Confirms that the partner erased the deleted recording: removed it and its audio from its store. */
  confirmErasure(audioId: string, options: RequestOptions = {}): Promise<void> {
    return this.confirmReceipt(audioId, { ...options, erased: true })
  }

  /**
   * Any sealed operation of the partner API by its operationId, its plaintext and its answer's data typed
   * and checked by the operation's contract, with the token, retries and sealing of every call: how a route
   * newer than this client's methods is called. `client.call('confirmReceipt', { audioId })` is
   * `confirmReceipt(audioId)`. An operation its contract marks atMostOnce is sent again only after a
   * refusal that shows nothing was done (isUnacted), never after a timeout, a lost answer or a 5000.
   */
  async call<Id extends SealedOperationId>(
    operationId: Id,
    plaintext: SealedPlaintextOf<Id>,
    options: RequestOptions = {},
  ): Promise<SealedResultOf<Id>> {
    const operation = sealedOperation(operationId)
    const checked = checkMessage(parserOf(operation.plaintext), withoutUndefined(plaintext as JsonObject))
    const eventId = randomUUID()
    const retryable = PartnerOperation[operationId].atMostOnce ? isUnacted : isRetryable
    const reply = await this.#authorized(operation.path, eventId, checked, options, retryable)
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

  protected useKey(keyVersion: number, secret: string): void {
    let key: EnvelopeKey
    try {
      key = loadKey(secret)
    } catch (error) {
      throw new EarshotResponseError(`the new key's secret is not usable: ${(error as Error).message}`, 200, {
        cause: error,
      })
    }
    this.#sealing = { key, keyVersion: checkPositiveInteger('keyVersion', keyVersion) }
    // The next call gets a token of the new key (the old key's token would still work, for its grace).
    this.#token = undefined
  }

  async #requestToken(): Promise<CachedToken> {
    const eventId = randomUUID()
    const requestedAt = this.#clock()
    const sealing = this.#sealing
    const reply = await this.#withRetries({}, () =>
      this.#post(
        TOKEN_PATH,
        () => ({ ...this.#seal(sealing, eventId, {}), enterpriseId: this.enterpriseId }),
        undefined,
        {},
      ),
    )
    let issued: AccessToken
    try {
      issued = AccessToken.parse(reply.data)
    } catch (error) {
      throw new EarshotResponseError(
        `the token response data is not an access token {accessToken, expiresIn, tokenType}: ${(error as Error).message}`,
        reply.httpStatus,
        { cause: error },
      )
    }
    const lifetimeMs = issued.expiresIn * 1000
    const info = {
      accessToken: issued.accessToken,
      expiresIn: issued.expiresIn,
      expiresAt: requestedAt + lifetimeMs,
    }
    const token = { info, renewAt: info.expiresAt - Math.min(RENEW_BEFORE_MS, lifetimeMs / 2) }
    // A token of a key rotated away meanwhile serves the calls waiting for it, and is not kept.
    if (this.#sealing === sealing) this.#token = token
    return token
  }

  /** The request sealed now, with issuedAt: replayed later than the platform's max age, it is refused. */
  #seal(sealing: SealingKey, eventId: string, plaintext: JsonObject) {
    const issuedAt = Math.floor(this.#clock() / 1000)
    return seal(sealing.key, sealing.keyVersion, eventId, { ...plaintext, issuedAt })
  }

  /**
   * A request with the bearer token; refused as 4010/4011, it is sent once more with a new token. It is
   * sealed with the key of its start, which also opens its answer, whatever a rotation meanwhile did.
   */
  async #authorized(
    path: string,
    eventId: string,
    plaintext: JsonObject,
    options: RequestOptions,
    retryable: Retryable = isRetryable,
  ): Promise<Answer> {
    checkTimeout(options.timeoutMs ?? this.#timeoutMs)
    const sealedWith = this.#sealing
    const send = async (token: string) => ({
      ...(await this.#withRetries(
        options,
        () => this.#post(path, () => this.#seal(sealedWith, eventId, plaintext), token, options),
        retryable,
      )),
      sealedWith,
    })
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

  #withRetries(
    options: RequestOptions,
    attempt: () => Promise<Success>,
    retryable?: Retryable,
  ): Promise<Success> {
    return withRetries({ retries: this.#retries, sleep: this.#sleep }, options, attempt, retryable)
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
  #openData(reply: Answer, eventId: string, what: string): unknown {
    const refuse = (why: string, cause?: unknown) =>
      new EarshotResponseError(`the ${what} response data ${why}`, reply.httpStatus, { cause })
    const { key, keyVersion } = reply.sealedWith
    let opened: ReturnType<typeof open>
    try {
      opened = open(reply.data, key)
    } catch (error) {
      throw refuse(`cannot be opened: ${(error as Error).message}`, error)
    }
    if (opened.envelope.eventId !== eventId || opened.envelope.keyVersion !== keyVersion) {
      throw refuse('answers another request: its eventId or keyVersion is not the request’s')
    }
    return opened.plaintext
  }
}
