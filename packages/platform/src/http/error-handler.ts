import { catalogueEntry, ProtocolError, ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import type { FastifyError, FastifyInstance } from 'fastify'
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
  // A path parameter longer than any the platform gives (maxParamLength): no such resource.
  FST_ERR_MAX_PARAM_LENGTH: ResponseCode.NOT_FOUND,
}

/** Maps anything thrown in a handler to one catalogue code; an unexpected error leaks no detail. */
export function toFailure(error: unknown): Failure | undefined {
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

/** Installs the catalogue error handler and a not-found handler answering in the same shape. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    let failure = toFailure(error)
    if (!failure && request.raw.readableAborted) {
      // The connection closed mid-body (the client left, or the request timeout cut it): nothing failed
      // here, so one line, no stack; the answer goes nowhere.
      request.log.info('client aborted the request before its body was complete')
      failure = { code: ResponseCode.INVALID_REQUEST, msg: 'the request body was cut off' }
    }
    if (!failure) request.log.error({ err: error }, 'unexpected error')
    const { code, msg, headers } = failure ?? { code: ResponseCode.INTERNAL_ERROR, msg: 'internal error' }
    if (code >= 5000 && failure) request.log.warn({ code, msg }, 'refused as unavailable')
    return reply
      .code(catalogueEntry(code).httpStatus)
      .headers(headers ?? {})
      .send({ code, msg, requestId: request.id })
  })
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      code: ResponseCode.NOT_FOUND,
      msg: `no endpoint ${request.method} ${request.url}`,
      requestId: request.id,
    }),
  )
}
