import {
  InvalidParameterError,
  ISSUED_AT_MAX_AHEAD_SECONDS,
  type JsonObject,
  ResponseCode,
  readIssuedAt,
} from '@earshot/protocol'
import { ApiError } from '../http/api-error.js'

/** What the freshness rule needs besides the plaintext. */
export interface FreshnessRule {
  nowMs: number
  /** EARSHOT_REQUEST_MAX_AGE. */
  maxAgeSeconds: number
  /** The enterprise refuses a request without issuedAt. */
  required: boolean
  /** Until when a request without issuedAt keeps its nonce (epoch milliseconds). */
  retainUntilMs: number
}

/**
 * Checks a sealed request's issuedAt and answers until when its nonce must be kept. A request carrying it
 * is refused once older than the max age, so its nonce is needed only until issuedAt + max age, plus the
 * allowance ahead for an instance whose clock is that much behind; never longer than without issuedAt.
 * A request without it keeps today's rule (retainUntilMs), unless its enterprise requires issuedAt.
 */
export function checkFreshness(plaintext: JsonObject, rule: FreshnessRule): number {
  const issuedAt = readIssuedAt(plaintext)
  if (issuedAt === undefined) {
    if (rule.required) {
      throw new InvalidParameterError(
        'issuedAt',
        'is required by this enterprise: seal every request with issuedAt, the seconds since the Unix epoch when it was sealed',
      )
    }
    return rule.retainUntilMs
  }
  const offset = issuedAt - Math.floor(rule.nowMs / 1000)
  if (offset > ISSUED_AT_MAX_AHEAD_SECONDS) {
    throw new ApiError(
      ResponseCode.TOKEN_EXPIRED,
      `issuedAt is ${offset} s ahead of the platform's clock: check the client's clock`,
    )
  }
  if (-offset > rule.maxAgeSeconds) {
    throw new ApiError(
      ResponseCode.TOKEN_EXPIRED,
      `issuedAt is ${-offset} s behind the platform's clock, too old: check the client's clock, and seal each request (retries too) when it is sent`,
    )
  }
  return Math.min(rule.retainUntilMs, (issuedAt + rule.maxAgeSeconds + ISSUED_AT_MAX_AHEAD_SECONDS) * 1000)
}
