import { InvalidParameterError, ISO_INSTANT_RULE, parseInstant, ResponseCode } from '@earshot/protocol'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { PlatformContext } from '../context.js'
import { enterpriseExists } from '../enterprises/enterprise-store.js'
import { ApiError } from '../http/api-error.js'
import {
  DELIVERY_STATES,
  type DeliveryFilter,
  type DeliveryState,
  type DeliveryView,
  getDelivery,
  listDeliveries,
  REPLAYABLE_STATES,
  replayDeliveries,
} from './delivery-store.js'
import { countUnreceipted, replayUnreceipted } from './unreceipted-replay.js'

export const DEFAULT_DELIVERY_LIMIT = 100
export const MAX_DELIVERY_LIMIT = 1000

const ID_RULE = 'must be a positive integer'
const AUDIO_ID_RULE = 'must be 1 to 128 printable ASCII characters'
const LIST_FIELDS = ['enterpriseId', 'state', 'audioId', 'before', 'limit'] as const
const RANGE_FIELDS = ['from', 'to'] as const
const UNRECEIPTED_FIELDS = ['since', 'dryRun'] as const

/**
 * The operators' view of push deliveries (DESIGN.md §7): list, show, replay. Replaying puts a failed or
 * unconfirmed delivery back to pending, due now, with the same eventId (the partner dedups).
 *
 * - GET  {prefix}/deliveries?enterpriseId=&state=&audioId=&before=&limit= → {deliveries}, newest first
 * - GET  {prefix}/deliveries/:deliveryId → the delivery with its attempts
 * - POST {prefix}/deliveries/:deliveryId/replay → {deliveryId, replayed: true, delivery}
 * - POST {prefix}/enterprises/:enterpriseId/deliveries/replay {from, to} → {enterpriseId, replayed}
 * - POST {prefix}/enterprises/:enterpriseId/deliveries/replay-unreceipted {since, dryRun?}
 *     → {enterpriseId, since, replayable, alreadyScheduled} with dryRun: true, else
 *       {enterpriseId, since, replayed, alreadyScheduled}: every delivery created since that was never
 *       receipted (acked, failed, unconfirmed) is pushed again; pending and in-flight ones are left alone
 */
export function deliveryRoutes(app: FastifyInstance, context: PlatformContext, prefix: string): void {
  const { db } = context

  app.get(
    `${prefix}/deliveries`,
    async (request): Promise<{ deliveries: DeliveryView[] }> => ({
      deliveries: await listDeliveries(db, deliveryFilter(request.query)),
    }),
  )

  app.get(`${prefix}/deliveries/:deliveryId`, async (request) => {
    const deliveryId = idParam(request, 'deliveryId')
    const delivery = await getDelivery(db, deliveryId)
    if (!delivery) throw noSuchDelivery(deliveryId)
    return delivery
  })

  app.post(`${prefix}/deliveries/:deliveryId/replay`, async (request) => {
    const deliveryId = idParam(request, 'deliveryId')
    // Replay first, then explain a refusal from what the delivery is: no window between check and act.
    const replayed = await replayDeliveries(db, { deliveryId })
    const delivery = await getDelivery(db, deliveryId)
    if (!delivery) throw noSuchDelivery(deliveryId)
    if (replayed === 0) {
      throw new InvalidParameterError(
        'state',
        `delivery ${deliveryId} is ${delivery.state}; only ${REPLAYABLE_STATES.join(' or ')} deliveries can be replayed`,
      )
    }
    return { deliveryId, replayed: true, delivery }
  })

  app.post(`${prefix}/enterprises/:enterpriseId/deliveries/replay`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
    if (!(await enterpriseExists(db, enterpriseId))) {
      throw new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
    }
    const { from, to } = replayRange(request.body)
    const replayed = await replayDeliveries(db, { enterpriseId, from, to })
    return { enterpriseId, replayed }
  })

  app.post(`${prefix}/enterprises/:enterpriseId/deliveries/replay-unreceipted`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
    const { since, dryRun } = unreceiptedReplay(request.body)
    if (!(await enterpriseExists(db, enterpriseId))) {
      throw new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
    }
    if (dryRun) return { enterpriseId, since, ...(await countUnreceipted(db, enterpriseId, since)) }
    return { enterpriseId, since, ...(await replayUnreceipted(db, enterpriseId, since)) }
  })
}

function noSuchDelivery(deliveryId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no delivery ${deliveryId}`)
}

function idParam(request: FastifyRequest, name: 'deliveryId' | 'enterpriseId'): number {
  const id = positiveInteger((request.params as Record<string, string>)[name])
  if (id === undefined) throw new InvalidParameterError(name, ID_RULE)
  return id
}

function positiveInteger(raw: unknown): number | undefined {
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) return undefined
  const value = Number(raw)
  return value >= 1 ? value : undefined
}

/** Validates the list query: every field optional, each given at most once, no unknown fields. */
function deliveryFilter(query: unknown): DeliveryFilter {
  const fields = (query ?? {}) as Record<string, unknown>
  for (const [name, value] of Object.entries(fields)) {
    if (!(LIST_FIELDS as readonly string[]).includes(name)) {
      throw new InvalidParameterError(name, `is not a filter; use ${LIST_FIELDS.join(', ')}`)
    }
    if (typeof value !== 'string') throw new InvalidParameterError(name, 'must be given once')
  }
  const text = fields as Partial<Record<(typeof LIST_FIELDS)[number], string>>
  const filter: DeliveryFilter = { limit: DEFAULT_DELIVERY_LIMIT }
  if (text.enterpriseId !== undefined) {
    filter.enterpriseId = positiveInteger(text.enterpriseId)
    if (filter.enterpriseId === undefined) throw new InvalidParameterError('enterpriseId', ID_RULE)
  }
  if (text.state !== undefined) {
    if (!(DELIVERY_STATES as readonly string[]).includes(text.state)) {
      throw new InvalidParameterError('state', `must be one of ${DELIVERY_STATES.join(', ')}`)
    }
    filter.state = text.state as DeliveryState
  }
  if (text.audioId !== undefined) {
    if (!/^[\x21-\x7e]{1,128}$/.test(text.audioId)) throw new InvalidParameterError('audioId', AUDIO_ID_RULE)
    filter.audioId = text.audioId
  }
  if (text.before !== undefined) {
    filter.before = positiveInteger(text.before)
    if (filter.before === undefined) {
      throw new InvalidParameterError('before', 'must be a delivery id (a positive integer)')
    }
  }
  if (text.limit !== undefined) {
    const limit = positiveInteger(text.limit)
    if (limit === undefined || limit > MAX_DELIVERY_LIMIT) {
      throw new InvalidParameterError('limit', `must be an integer from 1 to ${MAX_DELIVERY_LIMIT}`)
    }
    filter.limit = limit
  }
  return filter
}

/** The body of a range replay: {from, to}, ISO instants with an explicit offset, from before to. */
function replayRange(body: unknown): { from: string; to: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(ResponseCode.INVALID_REQUEST, 'the body must be a JSON object {"from", "to"}')
  }
  for (const name of Object.keys(body)) {
    if (!(RANGE_FIELDS as readonly string[]).includes(name)) {
      throw new InvalidParameterError(name, 'is not a field of a replay; give only from and to')
    }
  }
  const { from, to } = body as Record<string, unknown>
  const start = instant('from', from)
  const end = instant('to', to)
  if (start >= end) throw new InvalidParameterError('from', 'must be before to')
  return { from: from as string, to: to as string }
}

/** The body of an unreceipted replay: {since, dryRun?}, since an ISO instant with an explicit offset. */
function unreceiptedReplay(body: unknown): { since: string; dryRun: boolean } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(ResponseCode.INVALID_REQUEST, 'the body must be a JSON object {"since", "dryRun"}')
  }
  for (const name of Object.keys(body)) {
    if (!(UNRECEIPTED_FIELDS as readonly string[]).includes(name)) {
      throw new InvalidParameterError(name, 'is not a field of an unreceipted replay; give since and dryRun')
    }
  }
  const { since, dryRun = false } = body as Record<string, unknown>
  instant('since', since)
  if (typeof dryRun !== 'boolean') throw new InvalidParameterError('dryRun', 'must be true or false')
  return { since: since as string, dryRun }
}

function instant(field: string, value: unknown): number {
  const parsed = typeof value === 'string' ? parseInstant(value) : undefined
  if (parsed === undefined) throw new InvalidParameterError(field, `is required and ${ISO_INSTANT_RULE}`)
  return parsed
}
