import { issueTokenContract, MAX_ENTERPRISE_ID, ResponseCode, TokenPlaintext } from '@earshot/protocol'
import type { PlatformConfig } from '../config/config.js'
import { ApiError } from '../http/api-error.js'
import { replyResult } from '../http/partner-result.js'
import { defineRoute } from '../http/route-spec.js'
import type { BearerContext } from './authenticate.js'
import { usableKey } from './credentials.js'
import { openAndGuard, type PartnerEnv, readEnvelope } from './envelope-request.js'

/** What issuing a token reads besides a bearer request's checks. */
interface TokenContext extends BearerContext {
  config: Pick<PlatformConfig, 'requestMaxAgeSeconds' | 'replayWindowSeconds' | 'tokenTtlSeconds'>
  randomBytes: (size: number) => Buffer
}

/** POST /openapi/v1/token. The answer's data is not encrypted. */
export const tokenRoute = defineRoute(
  issueTokenContract,
  ({ context, rateLimit }: PartnerEnv<TokenContext>) =>
    async function issueToken(request, reply) {
      const { envelope, enterpriseId } = readEnvelope(request.body, { tokenRequest: true })
      if (!Number.isSafeInteger(enterpriseId) || (enterpriseId as number) < 1) {
        throw new ApiError(
          ResponseCode.INVALID_REQUEST,
          `enterpriseId must be an integer from 1 to ${MAX_ENTERPRISE_ID}, sent in plaintext beside the envelope fields`,
        )
      }
      const id = enterpriseId as number
      // Unknown enterprise and unknown keyVersion fail exactly like a wrong key: 4012, saying nothing.
      const credentials = await context.credentials.get(id, envelope.keyVersion)
      // A replay would yield a token: without issuedAt its nonce is kept for the long window
      // (EARSHOT_REPLAY_WINDOW), with it until the request is too old to be accepted anyway.
      const now = context.clock()
      const opened = await openAndGuard(context, envelope, id, usableKey(credentials, now), {
        requireIssuedAt: credentials?.requireIssuedAt ?? false,
        retainUntilMs: now + context.config.replayWindowSeconds * 1000,
      })
      if (credentials?.disabled) throw new ApiError(ResponseCode.FORBIDDEN, 'the enterprise is disabled')
      const plaintext = TokenPlaintext.parse(opened.plaintext)
      if (plaintext.enterpriseId !== undefined && plaintext.enterpriseId !== id) {
        throw new ApiError(ResponseCode.DECRYPTION_FAILED)
      }
      await rateLimit(request, id)

      const expiresIn = context.config.tokenTtlSeconds
      const accessToken = context.tokens.issue(
        {
          enterpriseId: id,
          keyVersion: envelope.keyVersion,
          expiresAt: Math.floor(context.clock() / 1000) + expiresIn,
        },
        context.randomBytes(12),
      )
      return replyResult(request, reply, { accessToken, expiresIn, tokenType: 'Bearer' })
    },
)
