import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  AccessToken,
  CallbackPlaintext,
  type Change,
  ChangePage as ChangePageMessage,
  ChangesRequest as ChangesRequestMessage,
  type EnvelopeKey,
  errorCatalogue,
  InvalidParameterError,
  isJsonObject,
  isTranscriptData,
  type JsonObject,
  loadKey,
  type MessageParser,
  open,
  parseTranscriptSentences,
  type RecordingData,
  RecordingFilter,
  RecordingList,
  ResponseCode,
  type ResponseCodeValue,
  type SPEC_VERSION,
  seal,
  type TranscriptSentence,
} from '@earshot/protocol'
import pRetry from 'p-retry'
import {
  EarshotApiError,
  EarshotConfigError,
  EarshotError,
  EarshotNetworkError,
  EarshotResponseError,
  EarshotTimeoutError,
} from './errors.js'

export interface EarshotClientOptions {
  /** Where the partner API listens, e.g. `https://earshot.example` (paths /openapi/v1/… are added). */
  baseUrl: string
  enterpriseId: number
  keyVersion: number
  /** The shared secret: 44 characters of Base64, or exactly 32 bytes of UTF-8 (DESIGN.md §1). */
  secret: string
  /** Bound on each HTTP attempt, in milliseconds; default 10_000. */
  timeoutMs?: number
  /** Retries after a transient failure (network, timeout, 5000, 5030, 4290); default 3. */
  retries?: number
  fetch?: typeof fetch
  /** Epoch milliseconds; decides when a cached token is renewed. */
  clock?: () => number
  /**
   * Waits out the Retry-After of a refused attempt (4290, 5030) before the retry; rejects with
   * `signal.reason` once the signal aborts. Default a timer; tests inject one they control.
   */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>
}

export interface RequestOptions {
  /** Aborting stops the request and any retry; the call rejects with `signal.reason`. */
  signal?: AbortSignal
  /** Overrides the client's timeoutMs for each HTTP attempt of this call. */
  timeoutMs?: number
}

export interface AudioItem {
  audioId: string
  data: RecordingData
  /** `data.transcriptSentences` parsed, when the data is the transcript form (set A). */
  sentences?: TranscriptSentence[]
}

/** A decrypted page of the query (contract §2.4), items with their parsed sentences. */
export interface AudioPage {
  specVersion: typeof SPEC_VERSION
  page: number
  size: number
  total: number
  items: AudioItem[]
}

/** One change of the feed (DESIGN.md §10), with its data's sentences parsed like AudioItem's. */
export type ChangeItem = Change & {
  /** `data.transcriptSentences` parsed, when the data is the transcript form (set A). */
  sentences?: TranscriptSentence[]
}

/** A decrypted page of the change feed: the changes after the cursor, oldest first. */
export interface ChangePage {
  specVersion: typeof SPEC_VERSION
  items: ChangeItem[]
  /** Where the next page starts: pass it as `cursor` to read on (once caught up: the later changes). */
  nextCursor: string
  /** More changes were already there beyond this page (a page stops early at about 1 MiB). */
  hasMore: boolean
  /**
   * How long the oldest of your changes already made on the platform, but not yet in the feed, has waited
   * (an older transaction still running there holds it back): how far behind the feed may be. 0 when
   * none, or when the platform does not say.
   */
  lagSeconds: number
}

/** Where to read the change feed from (DESIGN.md §10). */
export interface ChangesRequest {
  /** A nextCursor as answered; absent, the feed is read from its beginning. */
  cursor?: string | undefined
  /** Changes per page, 1 to 100; default 100. */
  size?: number | undefined
}

/** An access token as the platform issued it (contract §2.2). */
export interface AccessTokenInfo {
  accessToken: string
  /** Validity in seconds, as issued. */
  expiresIn: number
  /** When it expires, in epoch milliseconds of the client's clock. */
  expiresAt: number
}

const TOKEN_PATH = '/openapi/v1/token'
const AUDIOS_PATH = '/openapi/v1/audios'
const CALLBACK_PATH = '/openapi/v1/callback'
const CHANGES_PATH = '/openapi/v1/audios/changes'

const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_RETRIES = 3
const MAX_RETRIES = 100
/** setTimeout's limit. */
const MAX_TIMEOUT_MS = 2_147_483_647
/** A cached token is renewed this long before it expires (or at half its life when that is shorter). */
const RENEW_BEFORE_MS = 5 * 60_000
/** A 4290 asking to wait longer than this is not retried: the caller decides. */
const MAX_RETRY_AFTER_SECONDS = 60
const BACKOFF = { factor: 2, minTimeout: 250, maxTimeout: 5_000, randomize: true }

interface CachedToken {
  info: AccessTokenInfo
  renewAt: number
}

interface Success {
  data: unknown
  httpStatus: number
}

/**
 * A client of the partner API (contract §4): tokens, the recording query, the change feed (DESIGN.md
 * §10) and the receipt callback.
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
    const opened = this.#openData(reply, eventId, 'change feed')
    try {
      const page = ChangePageMessage.parse(opened)
      return {
        specVersion: page.specVersion,
        items: page.items.map((item) =>
          item.data && isTranscriptData(item.data)
            ? { ...item, sentences: parseTranscriptSentences(item.data.transcriptSentences) }
            : item,
        ),
        nextCursor: page.nextCursor,
        hasMore: page.hasMore,
        lagSeconds: page.lagSeconds ?? 0,
      }
    } catch (error) {
      throw new EarshotResponseError(
        `the change feed response data does not match DESIGN.md §10: ${(error as Error).message}`,
        reply.httpStatus,
        { cause: error },
      )
    }
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

  /** Tells the platform a pushed recording was received (contract §4.3); repeating it is harmless. */
  async confirmReceipt(audioId: string, options: RequestOptions = {}): Promise<void> {
    const plaintext = checkMessage(CallbackPlaintext, { audioId })
    await this.#authorized(CALLBACK_PATH, randomUUID(), plaintext, options)
  }

  async #requestToken(): Promise<CachedToken> {
    const eventId = randomUUID()
    const requestedAt = this.#clock()
    const reply = await this.#withRetries({}, () =>
      this.#post(
        TOKEN_PATH,
        () => ({ ...seal(this.#key, this.keyVersion, eventId, {}), enterpriseId: this.enterpriseId }),
        undefined,
        {},
      ),
    )
    let token: AccessToken
    try {
      token = AccessToken.parse(reply.data)
    } catch (error) {
      throw new EarshotResponseError(
        `the token response data does not match contract 2.2: ${(error as Error).message}`,
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

  /** A request with the bearer token; refused as 4010/4011, it is sent once more with a new token. */
  async #authorized(path: string, eventId: string, plaintext: JsonObject, options: RequestOptions) {
    checkTimeout(options.timeoutMs ?? this.#timeoutMs)
    const send = (token: string) =>
      this.#withRetries(options, () =>
        this.#post(path, () => seal(this.#key, this.keyVersion, eventId, plaintext), token, options),
      )
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
  async #post(
    path: string,
    body: () => object,
    token: string | undefined,
    options: RequestOptions,
  ): Promise<Success> {
    const { signal } = options
    signal?.throwIfAborted()
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs
    const controller = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, timeoutMs)
    const onAbort = () => controller.abort(signal?.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    const fetchImpl = this.#fetch
    try {
      const response = await fetchImpl(`${this.baseUrl}${path}`, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          ...(token && { authorization: `Bearer ${token}` }),
        },
        body: JSON.stringify(body()),
        signal: controller.signal,
      })
      return readReply(response.status, response.headers, await response.text())
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      if (timedOut) throw new EarshotTimeoutError(timeoutMs, { cause: error })
      if (error instanceof EarshotError) throw error
      throw new EarshotNetworkError(`cannot reach the platform at ${this.baseUrl}: ${describe(error)}`, {
        cause: error,
      })
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
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
    const plaintext = this.#openData(reply, eventId, 'query')
    try {
      const list = RecordingList.parse(plaintext)
      return {
        specVersion: list.specVersion,
        page: list.page,
        size: list.size,
        total: list.total,
        items: list.items.map(({ audioId, data }) =>
          isTranscriptData(data)
            ? { audioId, data, sentences: parseTranscriptSentences(data.transcriptSentences) }
            : { audioId, data },
        ),
      }
    } catch (error) {
      throw new EarshotResponseError(
        `the query response data does not match contract 2.4: ${(error as Error).message}`,
        reply.httpStatus,
        { cause: error },
      )
    }
  }
}

/** Turns an HTTP answer into its data, or throws the catalogue refusal it carries. */
function readReply(status: number, headers: Headers, text: string): Success {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  if (!isJsonObject(body) || !Number.isSafeInteger(body.code)) {
    throw new EarshotResponseError(
      `the platform answered HTTP ${status} without an Earshot JSON body ({code, msg, requestId})`,
      status,
    )
  }
  const code = body.code as number
  if (code === ResponseCode.OK) return { data: body.data, httpStatus: status }
  const msg =
    typeof body.msg === 'string' && body.msg.length > 0
      ? body.msg
      : (errorCatalogue.get(code as ResponseCodeValue)?.defaultMessage ?? `HTTP ${status}`)
  throw new EarshotApiError({
    code,
    msg,
    requestId:
      typeof body.requestId === 'string' ? body.requestId : (headers.get('x-request-id') ?? undefined),
    httpStatus: status,
    retryAfterSeconds: retryAfter(headers.get('retry-after')),
  })
}

function retryAfter(header: string | null): number | undefined {
  return header !== null && /^\d{1,9}$/.test(header.trim()) ? Number(header.trim()) : undefined
}

/**
 * A failure a later attempt may not meet: no connection, a timeout, 5000, 5030, a short 4290, a
 * gateway's 502/503/504.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof EarshotNetworkError || error instanceof EarshotTimeoutError) return true
  if (error instanceof EarshotApiError) {
    if (error.code === ResponseCode.RATE_LIMITED) {
      return (error.retryAfterSeconds ?? 0) <= MAX_RETRY_AFTER_SECONDS
    }
    return error.code === ResponseCode.INTERNAL_ERROR || error.code === ResponseCode.UNAVAILABLE
  }
  // A gateway in front of the platform that is itself failing.
  return error instanceof EarshotResponseError && [502, 503, 504].includes(error.httpStatus)
}

function isTokenRefusal(error: unknown): boolean {
  return (
    error instanceof EarshotApiError &&
    (error.code === ResponseCode.UNAUTHORIZED || error.code === ResponseCode.TOKEN_EXPIRED)
  )
}

/** The filter without undefined fields, checked as the platform would check it (4001 naming the field). */
function checkFilter(filter: RecordingFilter): JsonObject {
  return checkMessage(RecordingFilter, withoutUndefined(filter))
}

function withoutUndefined(value: unknown): unknown {
  return isJsonObject(value)
    ? Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined))
    : value
}

function checkMessage(parser: MessageParser<unknown>, value: unknown): JsonObject {
  try {
    parser.parse(value)
  } catch (error) {
    if (!(error instanceof InvalidParameterError)) throw error
    throw new EarshotApiError({ code: ResponseCode.INVALID_PARAMETER, msg: error.message }, { cause: error })
  }
  return value as JsonObject
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause
  const detail = typeof cause?.code === 'string' ? cause.code : cause?.message
  const message = error instanceof Error ? error.message : String(error)
  return typeof detail === 'string' && detail.length > 0 ? `${message} (${detail})` : message
}

function checkBaseUrl(baseUrl: unknown): string {
  if (typeof baseUrl !== 'string' || !URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new EarshotConfigError(
      `baseUrl must be an absolute http:// or https:// URL; got ${JSON.stringify(baseUrl)}`,
    )
  }
  return baseUrl.replace(/\/+$/, '')
}

function checkPositiveInteger(name: string, value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new EarshotConfigError(`${name} must be a positive integer; got ${JSON.stringify(value)}`)
  }
  return value as number
}

function checkTimeout(timeoutMs: unknown): number {
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new EarshotConfigError(
      `timeoutMs must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}; got ${String(timeoutMs)}`,
    )
  }
  return timeoutMs
}

function checkFunction<T>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new EarshotConfigError(`${name} must be a function when given`)
  }
  return value
}
