import {
  DecryptionFailedError,
  type Envelope,
  type EnvelopeKey,
  EnvelopeSchema,
  generateSecret,
  isJsonObject,
  type JsonObject,
  loadKey,
  open,
  parseEnvelope,
  ResponseCode,
  seal,
} from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PlatformConfig } from '../config/config.js'
import { ApiError } from '../http/api-error.js'
import type { Lifecycle } from '../http/create-server.js'
import { type ResultReply, sendResult } from '../http/partner-result.js'
import type { NonceGuard } from './replay-guard.js'
import { checkFreshness } from './request-freshness.js'

/** An opened request: who sent it, under which key, and its plaintext. */
export interface OpenedRequest {
  enterpriseId: number
  keyVersion: number
  eventId: string
  key: EnvelopeKey
  plaintext: JsonObject
}

/** Checks a per-enterprise limit; throws 4290 with Retry-After when it is exceeded. */
export type RateLimitCheck = (request: FastifyRequest, enterpriseId: number) => Promise<void>

/** What opening a sealed request needs: the clock, the request max age, and the replay guard. */
export interface GuardContext {
  clock: () => number
  config: Pick<PlatformConfig, 'requestMaxAgeSeconds'>
  acceptNonce: NonceGuard
}

/**
 * What the partner listener hands each of its routes: the platform's context (each route names the part it
 * reads), the rate limit, and the listener's lifecycle.
 */
export interface PartnerEnv<Context = GuardContext> {
  context: Context
  rateLimit: RateLimitCheck
  lifecycle: Lifecycle
}

/** The fields of a sealed envelope, as the protocol defines them. */
export const ENVELOPE_FIELDS: readonly string[] = Object.keys(EnvelopeSchema.properties)

/** What a body that is JSON but no envelope at all (none of its fields) is told. */
export function notAnEnvelope(tokenRequest: boolean): string {
  return (
    `the body must be a sealed envelope {${ENVELOPE_FIELDS.join(', ')}}` +
    (tokenRequest ? ' with enterpriseId beside its fields' : '') +
    ": seal the request's JSON with your secret and send the envelope, not the JSON itself"
  )
}

/**
 * The body as an envelope, with its optional plaintext enterpriseId beside it. A body that is not an
 * envelope at all (an array, a string, an object holding none of the envelope's fields: the plaintext
 * sent unsealed, say) is told what an envelope is; an envelope with a field wrong is told that field.
 */
export function readEnvelope(
  body: unknown,
  { tokenRequest = false }: { tokenRequest?: boolean } = {},
): { envelope: Envelope; enterpriseId: unknown } {
  if (!isJsonObject(body) || !ENVELOPE_FIELDS.some((field) => Object.hasOwn(body, field))) {
    throw new ApiError(ResponseCode.INVALID_REQUEST, notAnEnvelope(tokenRequest))
  }
  return { envelope: parseEnvelope(body), enterpriseId: body.enterpriseId }
}

/** Stands in for the key of an unknown enterprise or keyVersion; nobody holds it. */
const decoyKey = loadKey(generateSecret())

/** How long a request's nonce is kept: until retainUntilMs, or less when it is fresh (request-freshness.ts). */
export interface NonceRetention {
  /** The enterprise refuses requests without issuedAt. */
  requireIssuedAt: boolean
  /** Until when (epoch milliseconds) a request without issuedAt keeps its nonce. */
  retainUntilMs: number
}

/**
 * Opens the envelope under the key found for it, checks its issuedAt (4001, 4011), then records its nonce
 * for as long as the request could be accepted: a nonce accepted before under the same (enterprise,
 * keyVersion) and not yet expired is refused with 4090.
 * Without a key, the envelope is decrypted under a decoy key all the same, so that an unknown enterprise
 * or keyVersion takes as long to refuse as a wrong key does and timing tells them apart no better than
 * the answer, which is the same 4012. A stored secret that does not load is thrown here.
 */
export async function openAndGuard(
  context: GuardContext,
  envelope: Envelope,
  enterpriseId: number,
  key: EnvelopeKey | Error | undefined,
  retention: NonceRetention,
): Promise<OpenedRequest> {
  if (!key) {
    try {
      open(envelope, decoyKey)
    } catch {}
    throw new DecryptionFailedError()
  }
  if (key instanceof Error) throw key
  const { plaintext } = open(envelope, key)
  const expiresAtMs = checkFreshness(plaintext, {
    nowMs: context.clock(),
    maxAgeSeconds: context.config.requestMaxAgeSeconds,
    required: retention.requireIssuedAt,
    retainUntilMs: retention.retainUntilMs,
  })
  const { keyVersion, nonce } = envelope
  if (!(await context.acceptNonce({ enterpriseId, keyVersion, nonce, expiresAtMs }))) {
    throw new ApiError(
      ResponseCode.REPLAYED,
      'this envelope nonce was already used; seal every request afresh',
    )
  }
  return {
    enterpriseId,
    keyVersion: envelope.keyVersion,
    eventId: envelope.eventId,
    key,
    plaintext,
  }
}

/**
 * Answers 2000 with `data` sealed under the request's key, keyVersion and eventId. `Data` is the type the
 * route's contract asks for (the handler's answer), not read from the value, which is checked against it.
 */
export function replySealed<Data extends JsonObject>(
  request: FastifyRequest,
  reply: FastifyReply,
  opened: OpenedRequest,
  data: NoInfer<Data>,
): ResultReply<Data, true> {
  const sealed = seal(opened.key, opened.keyVersion, opened.eventId, data)
  return sendResult(request, reply, sealed) as unknown as ResultReply<Data, true>
}
