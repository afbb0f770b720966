import {
  DecryptionFailedError,
  type Envelope,
  type EnvelopeKey,
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
import type { PlatformContext } from '../context.js'
import { ApiError } from '../http/api-error.js'
import type { Lifecycle } from '../http/create-server.js'

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

/** What the partner listener hands each of its routes. */
export interface PartnerEnv {
  context: PlatformContext
  rateLimit: RateLimitCheck
  lifecycle: Lifecycle
}

/** The body as an envelope, with its optional plaintext enterpriseId beside it. */
export function readEnvelope(body: unknown): { envelope: Envelope; enterpriseId: unknown } {
  if (!isJsonObject(body))
    throw new ApiError(ResponseCode.INVALID_REQUEST, 'the body must be a JSON object (an envelope)')
  return { envelope: parseEnvelope(body), enterpriseId: body.enterpriseId }
}

/** Stands in for the key of an unknown enterprise or keyVersion; nobody holds it. */
const decoyKey = loadKey(generateSecret())

/**
 * Opens the envelope under the key found for it, then records its nonce until nonceExpiresAtMs: a nonce
 * accepted before under the same (enterprise, keyVersion) and not yet expired is refused with 4090.
 * Without a key, the envelope is decrypted under a decoy key all the same, so that an unknown enterprise
 * or keyVersion takes as long to refuse as a wrong key does and timing tells them apart no better than
 * the answer, which is the same 4012. A stored secret that does not load is thrown here.
 */
export async function openAndGuard(
  context: PlatformContext,
  envelope: Envelope,
  enterpriseId: number,
  key: EnvelopeKey | Error | undefined,
  nonceExpiresAtMs: number,
): Promise<OpenedRequest> {
  if (!key) {
    try {
      open(envelope, decoyKey)
    } catch {}
    throw new DecryptionFailedError()
  }
  if (key instanceof Error) throw key
  const { plaintext } = open(envelope, key)
  const { keyVersion, nonce } = envelope
  if (!(await context.acceptNonce({ enterpriseId, keyVersion, nonce, expiresAtMs: nonceExpiresAtMs }))) {
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

/** Answers 2000 with `data` sealed under the request's key, keyVersion and eventId. */
export function replySealed(
  request: FastifyRequest,
  reply: FastifyReply,
  opened: OpenedRequest,
  data: JsonObject,
) {
  return reply.send({
    code: ResponseCode.OK,
    msg: 'success',
    requestId: request.id,
    data: seal(opened.key, opened.keyVersion, opened.eventId, data),
  })
}
