import { errorCatalogue, isJsonObject, ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import { EarshotApiError, EarshotNetworkError, EarshotResponseError, EarshotTimeoutError } from './errors.js'

/** A 4290 asking for a longer wait than this is not retried: the caller decides. */
const MAX_RETRY_AFTER_SECONDS = 60

/** An answer of the platform that carried code 2000. */
export interface Success {
  data: unknown
  httpStatus: number
}

/** Turns an HTTP answer into its data, or throws the catalogue refusal it carries. */
export function readReply(status: number, headers: Headers, text: string): Success {
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

/** How a connection that was never made fails: nothing of the request reached the platform. */
const NEVER_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
])

/**
 * A retryable failure that shows the request was not acted on: a connection never made, 5030, a 4290 the
 * client waits out. After a timeout, a cut connection, 5000 or a gateway's 502-504 it may have been: a call
 * a second copy of would act twice (the contract's atMostOnce) is not sent again after those.
 */
export function isUnacted(error: unknown): boolean {
  if (error instanceof EarshotNetworkError) return NEVER_CONNECTED.has(codeOf(error))
  if (!(error instanceof EarshotApiError)) return false
  if (error.code === ResponseCode.RATE_LIMITED) return isRetryable(error)
  return error.code === ResponseCode.UNAVAILABLE
}

/** The first system code (ECONNREFUSED…) in an error's chain of causes; '' when none has one. */
function codeOf(error: unknown): string {
  for (let each = error, depth = 0; each instanceof Object && depth < 5; depth++) {
    const { code, cause } = each as { code?: unknown; cause?: unknown }
    if (typeof code === 'string' && !code.startsWith('ERR_EARSHOT')) return code
    each = cause
  }
  return ''
}

export function isTokenRefusal(error: unknown): boolean {
  return (
    error instanceof EarshotApiError &&
    (error.code === ResponseCode.UNAUTHORIZED || error.code === ResponseCode.TOKEN_EXPIRED)
  )
}

export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/** Why a connection failed: its cause's code (ENOTFOUND, ECONNREFUSED…), else the message. */
export function connectionDetail(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause
  if (typeof cause?.code === 'string') return cause.code
  if (typeof cause?.message === 'string' && cause.message.length > 0) return cause.message
  return error instanceof Error ? error.message : String(error)
}

/** The host of a URL (with its port, when it has one), or the URL itself when it does not parse. */
export function hostOf(url: string): string {
  return URL.canParse(url) ? new URL(url).host : url
}
