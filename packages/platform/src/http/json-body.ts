import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { ApiError } from './api-error.js'

/** Refuses a body that is not declared application/json (any charset parameter is fine). */
export function requireJsonContentType(request: FastifyRequest): void {
  const mediaType = request.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
  if (mediaType !== 'application/json') {
    throw new ApiError(
      ResponseCode.UNSUPPORTED_MEDIA_TYPE,
      `Content-Type must be application/json; got ${mediaType ? JSON.stringify(mediaType) : 'none'}`,
    )
  }
}
