import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { ApiError } from './api-error.js'

/** Where the admin listener serves its API. */
export const ADMIN_PREFIX = '/admin/v1'

/** What the admin API's ids (path or query) must be. */
export const ID_RULE = 'must be a positive integer'

/** A positive integer given as text (a path or query parameter), or undefined. */
export function positiveInteger(raw: unknown): number | undefined {
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) return undefined
  const value = Number(raw)
  return value >= 1 ? value : undefined
}

/** The path parameter `name` as a positive integer; 4001 naming it otherwise. */
export function idParam(request: FastifyRequest, name: string): number {
  const id = positiveInteger((request.params as Record<string, string>)[name])
  if (id === undefined) throw new InvalidParameterError(name, ID_RULE)
  return id
}

/** A body that is not a JSON object is not a request of this kind at all: 4000, not a field's 4001. */
export function jsonObject(body: unknown, shape = ''): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(
      ResponseCode.INVALID_REQUEST,
      `the body must be a JSON object${shape ? ` ${shape}` : ''}`,
    )
  }
  return body as Record<string, unknown>
}
