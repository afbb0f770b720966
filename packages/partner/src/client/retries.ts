import pRetry from 'p-retry'
import type { RequestOptions } from './client-types.js'
import { EarshotApiError } from './errors.js'
import { isRetryable, type Success } from './reply.js'

const BACKOFF = { factor: 2, minTimeout: 250, maxTimeout: 5_000, randomize: true }

/** How a client retries: how often, and how it waits out a Retry-After. */
export interface RetryPolicy {
  retries: number
  sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>
}

/** Which failures are sent again: isRetryable, or for a call that must not act twice isUnacted. */
export type Retryable = (error: unknown) => boolean

/**
 * `attempt` until it succeeds, fails in a way `retryable` does not send again, or the retries run out,
 * with backoff (and a refusal's Retry-After) between attempts; rejects with the last failure.
 */
export async function withRetries(
  policy: RetryPolicy,
  options: RequestOptions,
  attempt: () => Promise<Success>,
  retryable: Retryable = isRetryable,
): Promise<Success> {
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
        retries: policy.retries,
        ...(signal && { signal }),
        shouldRetry: (error) => retryable(error),
        onFailedAttempt: async (error) => {
          if (error.retriesLeft > 0 && retryable(error) && error instanceof EarshotApiError) {
            const seconds = error.retryAfterSeconds ?? 0
            if (seconds > 0) await policy.sleep(seconds * 1000, signal)
          }
        },
      },
    )
  } catch (error) {
    // p-retry reports the most frequent error; the last one is the one to report.
    throw signal?.aborted ? signal.reason : (last ?? error)
  }
}
