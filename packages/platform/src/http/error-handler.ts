import type { IncomingMessage } from 'node:http'
import { catalogueEntry, ProtocolError, ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './api-error.js'

interface Failure {
  code: ResponseCodeValue
  msg: string
  headers?: Record<string, string>
}

/** Fastify's own errors that a client can cause, by their code. */
const frameworkErrors: Record<string, ResponseCodeValue> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ResponseCode.PAYLOAD_TOO_LARGE,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ResponseCode.UNSUPPORTED_MEDIA_TYPE,
  FST_ERR_CTP_EMPTY_JSON_BODY: ResponseCode.INVALID_REQUEST,
  FST_ERR_CTP_INVALID_JSON_BODY: ResponseCode.INVALID_REQUEST,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ResponseCode.INVALID_REQUEST,
  FST_ERR_VALIDATION: ResponseCode.INVALID_PARAMETER,
  // A path parameter longer than any the platform gives (maxParamLength).
  FST_ERR_MAX_PARAM_LENGTH: ResponseCode.URI_TOO_LONG,
}

/**
 * Maps anything thrown in a handler to one catalogue code; an unexpected error leaks no detail. Every
 * 4012 gets the catalogue's one message, whatever failed (a wrong secret, an unknown enterprise or
 * keyVersion, an enterpriseId not matching the token), so that the answer never tells them apart.
 */
export function toFailure(error: unknown): Failure | undefined {
  const failure = failureOf(error)
  if (failure?.code === ResponseCode.DECRYPTION_FAILED)
    failure.msg = catalogueEntry(failure.code).defaultMessage
  return failure
}

function failureOf(error: unknown): Failure | undefined {
  if (error instanceof ApiError) return { code: error.code, msg: error.message, headers: error.headers }
  if (error instanceof ProtocolError) return { code: error.responseCode, msg: error.message }
  const fastifyError = error as Partial<FastifyError>
  const code = fastifyError.code ? frameworkErrors[fastifyError.code] : undefined
  if (code === ResponseCode.INVALID_PARAMETER)
    return { code, msg: fastifyError.message ?? 'invalid parameter' }
  if (code === ResponseCode.INVALID_REQUEST) return { code, msg: 'the body is not valid JSON' }
  if (code) return { code, msg: catalogueEntry(code).defaultMessage }
  return undefined
}

/**
 * Requests cut off by the request timeout: the 4080 answer was written and logged by the server's
 * clientError handler (create-server.ts), so the body's abort that follows is not logged again.
 */
const timedOut = new WeakSet<IncomingMessage>()

export function markTimedOut(request: IncomingMessage): void {
  timedOut.add(request)
}

/** A refusal as its request's log line tells it. */
export interface NotedRefusal {
  code: ResponseCodeValue
  /** The msg of a 5xx, which the platform wrote (why it is unavailable); a 4xx's may echo the request. */
  reason?: string
}

/** The catalogue code each refused request was answered with, for its request log line. */
const refusals = new WeakMap<FastifyRequest, NotedRefusal>()

/** How a request was refused; undefined when it was not refused (or not by a handler here). */
export function refusalOf(request: FastifyRequest): NotedRefusal | undefined {
  return refusals.get(request)
}

export function noteRefusal(request: FastifyRequest, code: ResponseCodeValue, msg?: string): void {
  refusals.set(request, code >= 5000 && msg !== undefined ? { code, reason: msg } : { code })
}

/** Installs the catalogue error handler and a not-found handler answering in the same shape. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    let failure = toFailure(error)
    if (!failure && request.raw.readableAborted) {
      // The connection closed mid-body (the client left, or the request timeout cut it): nothing failed
      // here, so one line, no stack; the answer goes nowhere.
      if (!timedOut.has(request.raw)) {
        request.log.info({ req: request }, 'client aborted the request before its body was complete')
      }
      failure = { code: ResponseCode.INVALID_REQUEST, msg: 'the request body was cut off' }
    }
    if (!failure) request.log.error({ err: error }, 'unexpected error')
    const { code, msg, headers } = failure ?? { code: ResponseCode.INTERNAL_ERROR, msg: 'internal error' }
    // A 5030's reason (shutting down, connection caps) is in its request's log line (create-server.ts).
    noteRefusal(request, code, msg)
    return reply
      .code(catalogueEntry(code).httpStatus)
      .headers(headers ?? {})
      .send({ code, msg, requestId: request.id })
  })
  app.setNotFoundHandler((request, reply) => {
    noteRefusal(request, ResponseCode.NOT_FOUND)
    return reply.code(404).send({
      code: ResponseCode.NOT_FOUND,
      msg: `no endpoint ${request.method} ${request.url}`,
      requestId: request.id,
    })
  })
}
