/** What the partner API's client takes and answers. */
import type { Change, RecordingData, SPEC_VERSION, TranscriptSentence } from '@earshot/protocol'

export interface EarshotClientOptions {
  /** Where the partner API listens, e.g. `https://earshot.example` (paths /openapi/v1/… are added). */
  baseUrl: string
  enterpriseId: number
  keyVersion: number
  /** The shared secret: 44 characters of Base64, or exactly 32 bytes of UTF-8. */
  secret: string
  /** Bound on each HTTP attempt, in milliseconds; default 10_000. */
  timeoutMs?: number
  /** Retries after a transient failure (network, timeout, 5000, 5030, 4290); default 3. */
  retries?: number
  fetch?: typeof fetch
  /** Epoch milliseconds: each request's issuedAt, and when a cached token is renewed. */
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

export interface ConfirmOptions extends RequestOptions {
  /** An erasure confirmation: the partner removed the deleted recording and its audio from its store. */
  erased?: boolean | undefined
}

export interface AudioItem {
  audioId: string
  data: RecordingData
  /** `data.transcriptSentences` parsed, when the data is the transcript form (set A). */
  sentences?: TranscriptSentence[]
}

/** A decrypted page of the query, items with their parsed sentences. */
export interface AudioPage {
  specVersion: typeof SPEC_VERSION
  page: number
  size: number
  total: number
  items: AudioItem[]
}

/** One change of the feed, with its data's sentences parsed like AudioItem's. */
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

/** Where to read the change feed from. */
export interface ChangesRequest {
  /** A nextCursor as answered; absent, the feed is read from its beginning. */
  cursor?: string | undefined
  /** Changes per page, 1 to 100; default 100. */
  size?: number | undefined
}

/** An access token as the platform issued it. */
export interface AccessTokenInfo {
  accessToken: string
  /** Validity in seconds, as issued. */
  expiresIn: number
  /** When it expires, in epoch milliseconds of the client's clock. */
  expiresAt: number
}
