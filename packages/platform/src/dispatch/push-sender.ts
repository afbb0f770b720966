import { KEPT_ANSWER_BYTES } from '@earshot/protocol'
import { Agent, errors, request } from 'undici'
import { ADDRESS_REFUSED_CODE, guardedLookup, hostLiteralRefusal } from '../http/address-policy.js'

/** How an attempt ended, for metrics: an ack, or why not. */
export type AttemptResult = 'acked' | 'rejected' | 'timeout' | 'network_error' | 'address_refused' | 'aborted'

export interface SendOutcome {
  result: AttemptResult
  acked: boolean
  durationMs: number
  httpStatus?: number | undefined
  responseCode?: number | undefined
  error?: string | undefined
  /** The first MAX_RESPONSE_BYTES of the answer's body, as the partner reads it back. */
  answer?: string | undefined
}

export interface PushSenderOptions {
  timeoutMs: number
  allowPrivate: boolean
  /** Keep-alive connections per push URL origin. */
  connectionsPerOrigin: number
}

export interface OutgoingPush {
  url: string
  eventId: string
  body: string
  signal?: AbortSignal
  /** Sent besides Content-Type and X-Earshot-Event-Id (the receiver check's X-Earshot-Check). */
  headers?: Record<string, string>
}

export interface PushSender {
  /** POSTs one sealed push; never throws: every failure is an outcome. */
  send(push: OutgoingPush): Promise<SendOutcome>
  close(): Promise<void>
}

/**
 * Enough for `{"code":2000,...}`; a partner answering more is cut off, not read. What it read is what the
 * attempt keeps for the partner to see.
 */
export const MAX_RESPONSE_BYTES = KEPT_ANSWER_BYTES

/**
 * Sends pushes over keep-alive connections. Acknowledged = HTTP 2xx and a JSON body with code 2000,
 * all within the timeout. The address actually connected to is checked (guardedLookup),
 * so a name that re-resolves to a private or metadata address is refused at connect time. Redirects
 * are never followed (undici's `request` follows none without a redirect interceptor, and this agent
 * has none): a 3xx is a rejected attempt, so a partner cannot bounce a push to a refused address.
 */
export function createPushSender({
  timeoutMs,
  allowPrivate,
  connectionsPerOrigin,
}: PushSenderOptions): PushSender {
  const agent = new Agent({
    connections: connectionsPerOrigin,
    connect: { lookup: guardedLookup(allowPrivate), timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  })

  async function send({ url, eventId, body, signal, headers }: OutgoingPush): Promise<SendOutcome> {
    const started = performance.now()
    const elapsed = () => performance.now() - started
    const refusal = hostLiteralRefusal(new URL(url), allowPrivate)
    if (refusal)
      return {
        result: 'address_refused',
        acked: false,
        durationMs: 0,
        error: `push address refused: ${refusal}`,
      }

    const deadline = AbortSignal.timeout(timeoutMs)
    try {
      const response = await request(url, {
        method: 'POST',
        dispatcher: agent,
        headers: { ...headers, 'content-type': 'application/json', 'x-earshot-event-id': eventId },
        body,
        signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
      })
      const { text, head } = await readAtMost(response.body, MAX_RESPONSE_BYTES)
      const httpStatus = response.statusCode
      const responseCode = text === undefined ? undefined : codeOf(text)
      const acked = httpStatus >= 200 && httpStatus < 300 && responseCode === 2000
      return {
        result: acked ? 'acked' : 'rejected',
        acked,
        durationMs: elapsed(),
        httpStatus,
        responseCode,
        answer: head,
        ...(!acked && { error: rejection(httpStatus, text, responseCode) }),
      }
    } catch (error) {
      return { acked: false, durationMs: elapsed(), ...failure(error, deadline, timeoutMs) }
    }
  }

  return { send, close: () => agent.close() }
}

/** The whole body as text when it is within the limit; its first `limit` bytes (as text, NUL-free) either way. */
async function readAtMost(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number) {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
    if (size > limit) {
      body.destroy()
      break
    }
  }
  const bytes = Buffer.concat(chunks)
  // PostgreSQL text holds no U+0000.
  const head = bytes.subarray(0, limit).toString('utf8').replaceAll('\u0000', '\uFFFD')
  return { text: size > limit ? undefined : bytes.toString('utf8'), head }
}

function codeOf(text: string): number | undefined {
  try {
    const parsed: unknown = JSON.parse(text)
    const code = (parsed as { code?: unknown } | null)?.code
    return typeof code === 'number' ? code : undefined
  } catch {
    return undefined
  }
}

function rejection(httpStatus: number, text: string | undefined, responseCode: number | undefined): string {
  if (text === undefined) return `response body over ${MAX_RESPONSE_BYTES} bytes`
  if (httpStatus < 200 || httpStatus >= 300) return `HTTP ${httpStatus}`
  return responseCode === undefined
    ? 'response is not JSON with a numeric code'
    : `response code ${responseCode}`
}

function failure(
  error: unknown,
  deadline: AbortSignal,
  timeoutMs: number,
): Pick<SendOutcome, 'result' | 'error'> {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  if ((error as { code?: string }).code === ADDRESS_REFUSED_CODE || cause?.code === ADDRESS_REFUSED_CODE) {
    return { result: 'address_refused', error: cause?.message ?? (error as Error).message }
  }
  if (
    deadline.aborted ||
    error instanceof errors.HeadersTimeoutError ||
    error instanceof errors.BodyTimeoutError ||
    error instanceof errors.ConnectTimeoutError
  ) {
    return { result: 'timeout', error: `no answer within ${timeoutMs / 1000} s` }
  }
  if ((error as Error).name === 'AbortError')
    return { result: 'aborted', error: 'aborted: the dispatcher stopped' }
  const code = (error as { code?: string }).code ?? cause?.code
  return { result: 'network_error', error: `${code ? `${code}: ` : ''}${(error as Error).message}` }
}
