import { errorCatalogue, type ResponseCodeName, type ResponseCodeValue } from '@earshot/protocol'

/**
 * Base of every error the client throws. `code` is stable to branch on: the catalogue code (a number,
 * the error catalogue) for EarshotApiError, an `ERR_EARSHOT_…` string for the others.
 */
export abstract class EarshotError extends Error {
  abstract readonly code: string | number

  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
  }
}

/**
 * The platform answered with a catalogue code other than 2000, or a filter or audioId was refused
 * locally before sending (code 4001, with no requestId or httpStatus), or a recording to download is
 * not in the query's answer (code 4040, likewise). `name` is the catalogue name (e.g. `NOT_FOUND`) when
 * the code is in the catalogue.
 */
export class EarshotApiError extends EarshotError {
  readonly code: ResponseCodeValue | number
  readonly msg: string
  readonly requestId: string | undefined
  /** The HTTP status of the answer; undefined when the request was refused before it was sent. */
  readonly httpStatus: number | undefined
  /** Seconds from the Retry-After header (4290), when present. */
  readonly retryAfterSeconds: number | undefined

  constructor(
    details: {
      code: number
      msg: string
      requestId?: string | undefined
      httpStatus?: number | undefined
      retryAfterSeconds?: number | undefined
    },
    options?: ErrorOptions,
  ) {
    super(`error ${details.code}: ${details.msg}`, options)
    this.code = details.code
    this.msg = details.msg
    this.requestId = details.requestId
    this.httpStatus = details.httpStatus
    this.retryAfterSeconds = details.retryAfterSeconds
    this.name = catalogueName(details.code) ?? 'EarshotApiError'
  }
}

/** The platform could not be reached, or the connection failed before a full answer arrived. */
export class EarshotNetworkError extends EarshotError {
  readonly code = 'ERR_EARSHOT_NETWORK'
}

/** One HTTP attempt took longer than its timeoutMs. */
export class EarshotTimeoutError extends EarshotError {
  readonly code = 'ERR_EARSHOT_TIMEOUT'

  constructor(
    readonly timeoutMs: number,
    options?: ErrorOptions,
  ) {
    super(`the platform did not answer within ${timeoutMs} ms`, options)
  }
}

/**
 * What answered is not the Earshot API as the contract defines it: not a catalogue JSON body, or
 * response data that cannot be opened or does not match its schema.
 */
export class EarshotResponseError extends EarshotError {
  readonly code = 'ERR_EARSHOT_RESPONSE'

  constructor(
    message: string,
    readonly httpStatus: number,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/** The recording has no audio part (no `denoiseUrl`): there is nothing to download. */
export class EarshotNoAudioError extends EarshotError {
  readonly code = 'ERR_EARSHOT_NO_AUDIO'

  constructor(
    readonly audioId: string,
    options?: ErrorOptions,
  ) {
    super(`recording ${audioId} has no audio part (no denoiseUrl)`, options)
  }
}

/**
 * The downloaded audio is not the file the link stated (its `Repr-Digest`): the partial file was removed,
 * and a new download starts from the beginning.
 */
export class EarshotDigestMismatchError extends EarshotError {
  readonly code = 'ERR_EARSHOT_DIGEST_MISMATCH'

  constructor(
    /** The SHA-256 stated by the link, and that of the bytes received, both in lower-case hex. */
    readonly expected: string,
    readonly actual: string,
    options?: ErrorOptions,
  ) {
    super(`the downloaded audio's SHA-256 is ${actual}, but the link stated ${expected}`, options)
  }
}

/** The client options are unusable; thrown by the constructor, naming the option. */
export class EarshotConfigError extends EarshotError {
  readonly code = 'ERR_EARSHOT_CONFIG'
}

function catalogueName(code: number): ResponseCodeName | undefined {
  return errorCatalogue.get(code as ResponseCodeValue)?.name
}
