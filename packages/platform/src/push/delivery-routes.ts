import {
  checkInstant,
  InvalidParameterError,
  ISO_INSTANT_PATTERN,
  ISO_INSTANT_RULE,
  messageParser,
  ResponseCode,
  RULE,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import type { PlatformContext } from '../context.js'
import { existingEnterpriseId, requireEnterprise } from '../enterprises/enterprise-params.js'
import { ID_RULE, idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { DELIVERY_STATES, REPLAYABLE_STATES, replayDeliveries } from './delivery-store.js'
import { type DeliveryFilter, type DeliveryView, getDelivery, listDeliveries } from './delivery-views.js'
import { countUnreceipted, replayUnreceipted } from './unreceipted-replay.js'

export const DEFAULT_DELIVERY_LIMIT = 100
export const MAX_DELIVERY_LIMIT = 1000

/** A positive integer as query text: up to 15 digits, not all zeros. */
const IdText = (description: string, rule: string) =>
  Type.String({ pattern: '^0*[1-9][0-9]*$', maxLength: 15, description, [RULE]: rule })
const Instant = (description: string) =>
  Type.String({ pattern: ISO_INSTANT_PATTERN, description, [RULE]: ISO_INSTANT_RULE })

/** The list's query string; every field optional, each given once. */
export const DeliveryListQuerySchema = Type.Object(
  {
    enterpriseId: Type.Optional(IdText('only deliveries of this enterprise', ID_RULE)),
    state: Type.Optional(
      Type.Enum(DELIVERY_STATES, {
        description: 'only deliveries in this state',
        [RULE]: `must be one of ${DELIVERY_STATES.join(', ')}`,
      }),
    ),
    audioId: Type.Optional(
      Type.String({
        pattern: '^[\\x21-\\x7e]{1,128}$',
        description: 'only deliveries of this recording',
        [RULE]: 'must be 1 to 128 printable ASCII characters',
      }),
    ),
    before: Type.Optional(
      IdText(
        'only deliveries with a smaller id: the last deliveryId of a page, for the next one',
        'must be a delivery id (a positive integer)',
      ),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: '^0*([1-9][0-9]{0,2}|1000)$',
        maxLength: 15,
        description: `deliveries per page, default ${DEFAULT_DELIVERY_LIMIT}`,
        [RULE]: `must be an integer from 1 to ${MAX_DELIVERY_LIMIT}`,
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a filter; use enterpriseId, state, audioId, before, limit',
  },
)
const deliveryListQuery = messageParser(DeliveryListQuerySchema)

/** A range replay: the enterprise's failed and unconfirmed deliveries created from `from` until `to`. */
export const ReplayRangeSchema = Type.Object(
  {
    from: Instant("inclusive lower bound on the deliveries' creation time"),
    to: Instant("exclusive upper bound on the deliveries' creation time"),
  },
  { additionalProperties: false, [UNKNOWN_FIELD_RULE]: 'is not a field of a replay; give only from and to' },
)
const replayRange = messageParser(ReplayRangeSchema, ({ from, to }) => {
  const start = checkInstant('from', from) as bigint
  if (start >= (checkInstant('to', to) as bigint))
    throw new InvalidParameterError('from', 'must be before to')
})

/** An unreceipted replay: every delivery created since `since` that was never receipted. */
export const UnreceiptedReplaySchema = Type.Object(
  {
    since: Instant("inclusive lower bound on the deliveries' creation time"),
    dryRun: Type.Optional(
      Type.Boolean({
        description: 'true: only count what would be replayed; default false',
        [RULE]: 'must be true or false',
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of an unreceipted replay; give since and dryRun',
  },
)
const unreceiptedReplay = messageParser(UnreceiptedReplaySchema, ({ since }) => {
  checkInstant('since', since)
})

/**
 * The operators' view of push deliveries: list, show, replay. Replaying puts a failed or
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
    const enterpriseId = await existingEnterpriseId(db, request)
    const { from, to } = replayRange.parse(jsonObject(request.body, '{"from", "to"}'))
    const replayed = await replayDeliveries(db, { enterpriseId, from, to })
    return { enterpriseId, replayed }
  })

  app.post(`${prefix}/enterprises/:enterpriseId/deliveries/replay-unreceipted`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
    const { since, dryRun = false } = unreceiptedReplay.parse(jsonObject(request.body, '{"since", "dryRun"}'))
    await requireEnterprise(db, enterpriseId)
    if (dryRun) return { enterpriseId, since, ...(await countUnreceipted(db, enterpriseId, since)) }
    return { enterpriseId, since, ...(await replayUnreceipted(db, enterpriseId, since)) }
  })
}

function noSuchDelivery(deliveryId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no delivery ${deliveryId}`)
}

/** Validates the list query (each field given once: a repeated one arrives as an array). */
function deliveryFilter(query: unknown): DeliveryFilter {
  for (const [name, value] of Object.entries(query ?? {})) {
    if (Array.isArray(value)) throw new InvalidParameterError(name, 'must be given once')
  }
  const text = deliveryListQuery.parse(query ?? {})
  const filter: DeliveryFilter = { limit: DEFAULT_DELIVERY_LIMIT }
  if (text.enterpriseId !== undefined) filter.enterpriseId = Number(text.enterpriseId)
  if (text.state !== undefined) filter.state = text.state
  if (text.audioId !== undefined) filter.audioId = text.audioId
  if (text.before !== undefined) filter.before = Number(text.before)
  if (text.limit !== undefined) filter.limit = Number(text.limit)
  return filter
}
