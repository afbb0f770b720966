import type { RequestOptions } from './client-types.js'
import { EarshotError, EarshotNetworkError, EarshotTimeoutError } from './errors.js'
import { connectionDetail, readReply, type Success } from './reply.js'

/** Where and how a client sends its requests. */
export interface PostTarget {
  baseUrl: string
  fetch: typeof fetch
  timeoutMs: number
}

/** One HTTP attempt: the body is built (so sealed) anew for every attempt. */
export async function postAttempt(
  target: PostTarget,
  path: string,
  body: () => object,
  token: string | undefined,
  options: RequestOptions,
): Promise<Success> {
  const { signal } = options
  signal?.throwIfAborted()
  const timeoutMs = options.timeoutMs ?? target.timeoutMs
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, timeoutMs)
  const onAbort = () => controller.abort(signal?.reason)
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const response = await target.fetch(`${target.baseUrl}${path}`, {
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
    throw new EarshotNetworkError(
      `cannot reach the platform at ${target.baseUrl} (${connectionDetail(error)})`,
      { cause: error },
    )
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}
