import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { ApiError } from '../http/api-error.js'
import { bearerCredentials } from '../http/bearer.js'
import type { AccessTokens } from './access-tokens.js'
import type { CredentialCache } from './credential-cache.js'
import { usableKey } from './credentials.js'
import {
  type GuardContext,
  type OpenedRequest,
  openAndGuard,
  type RateLimitCheck,
  readEnvelope,
} from './envelope-request.js'

/** What checking a bearer request needs besides the guard: the tokens and the enterprises' keys. */
export interface BearerContext extends GuardContext {
  tokens: AccessTokens
  credentials: CredentialCache
}

/**
 * How long a bearer request's nonce outlives its token: instances compare expiries with their own clocks,
 * so an instance whose clock is behind still takes the token a little after another pruned its nonces.
 */
const CLOCK_SKEW_SECONDS = 300

/**
 * The pipeline of every request made with a token: bearer token (4010/4011), envelope shape (4000;
 * 4012 for a keyVersion above 2^31 − 1, which no key has, before any lookup),
 * enterpriseId beside the envelope matching the token (4012), enterprise enabled (4030) and token not
 * revoked (4010), rate limit (4290), decryption (4012/4000), issuedAt (4001/4011), replay (4090).
 */
export async function authenticate(
  context: BearerContext,
  request: FastifyRequest,
  rateLimit: RateLimitCheck,
): Promise<OpenedRequest> {
  const token = bearerCredentials(request.headers.authorization)
  if (!token) throw new ApiError(ResponseCode.UNAUTHORIZED, 'Authorization must be "Bearer <accessToken>"')
  const checked = context.tokens.check(token, Math.floor(context.clock() / 1000))
  if (!checked.ok) {
    throw checked.reason === 'expired'
      ? new ApiError(ResponseCode.TOKEN_EXPIRED, 'the access token has expired; request a new one')
      : new ApiError(ResponseCode.UNAUTHORIZED, 'the access token is not valid')
  }
  const { enterpriseId, keyVersion: tokenKeyVersion } = checked.claims

  const { envelope, enterpriseId: claimed } = readEnvelope(request.body)
  if (claimed !== undefined && claimed !== enterpriseId) {
    throw new ApiError(ResponseCode.DECRYPTION_FAILED)
  }
  const credentials = await context.credentials.get(enterpriseId, tokenKeyVersion)
  if (!credentials) throw new ApiError(ResponseCode.UNAUTHORIZED, 'the access token is not valid')
  if (credentials.disabled) throw new ApiError(ResponseCode.FORBIDDEN, 'the enterprise is disabled')
  const now = context.clock()
  if (!usableKey(credentials, now)) {
    throw new ApiError(ResponseCode.UNAUTHORIZED, 'the access token was revoked: its key version is retired')
  }
  await rateLimit(request, enterpriseId)
  const envelopeCredentials =
    envelope.keyVersion === tokenKeyVersion
      ? credentials
      : await context.credentials.get(enterpriseId, envelope.keyVersion)
  // Replayed once its token has expired, the request gets 4011: its nonce is kept only until then.
  return openAndGuard(context, envelope, enterpriseId, usableKey(envelopeCredentials, now), {
    requireIssuedAt: credentials.requireIssuedAt,
    retainUntilMs: (checked.claims.expiresAt + CLOCK_SKEW_SECONDS) * 1000,
  })
}
