import {
  DEFAULT_PAGE_SIZE,
  DeliveryListRequestSchema,
  DeliveryReplayRequestSchema,
  eventTypeNamed,
  InvalidParameterError,
  messageParser,
  type PartnerDelivery,
  ResponseCode,
} from '@earshot/protocol'
import { deliveryEnterprise } from '../deliveries/delivery-owner.js'
import { replayDeliveries } from '../deliveries/delivery-replays.js'
import { REPLAYABLE_STATES } from '../deliveries/delivery-store.js'
import { type DeliveryView, getDelivery, listDeliveries } from '../deliveries/delivery-views.js'
import { ApiError } from '../http/api-error.js'
import type { EventType } from '../recordings/recording-events.js'
import type { Database, Queryable } from '../storage/database.js'

/* A partner's own deliveries: a page of them with their attempts, and replaying them. */

const DeliveryListRequest = messageParser(DeliveryListRequestSchema)
const DeliveryReplayRequest = messageParser(DeliveryReplayRequestSchema)

export interface DeliveryPage {
  items: PartnerDelivery[]
  nextCursor: string | null
  hasMore: boolean
}

/** A page of the enterprise's deliveries, newest first, as the partner asked for them. */
export async function listPartnerDeliveries(
  db: Queryable,
  enterpriseId: number,
  body: unknown,
): Promise<DeliveryPage> {
  const request = DeliveryListRequest.parse(body)
  const size = request.size ?? DEFAULT_PAGE_SIZE
  const rows = await listDeliveries(db, {
    enterpriseId,
    state: request.state,
    eventType: request.eventType === undefined ? undefined : (eventTypeNamed(request.eventType) as EventType),
    audioId: request.audioId,
    from: request.since,
    to: request.until,
    before: request.cursor === undefined ? undefined : cursorId(request.cursor),
    limit: size + 1,
  })
  const items = rows.slice(0, size).map(partnerView)
  const hasMore = rows.length > size
  const last = items.at(-1)
  return { items, hasMore, nextCursor: hasMore && last ? cursorOf(last.deliveryId) : null }
}

/** Replays one delivery of the enterprise, or those in the states given created since a time. */
export async function replayPartnerDeliveries(
  db: Database,
  enterpriseId: number,
  body: unknown,
): Promise<{ replayed: number }> {
  const request = DeliveryReplayRequest.parse(body)
  if (request.deliveryId !== undefined) {
    if (request.states !== undefined || request.since !== undefined) {
      throw new InvalidParameterError('deliveryId', 'give deliveryId alone, or states and since without it')
    }
    return { replayed: await replayOne(db, enterpriseId, request.deliveryId) }
  }
  if (request.states === undefined || request.since === undefined) {
    throw new InvalidParameterError(
      request.since === undefined ? 'since' : 'states',
      'give deliveryId, or both states (failed, unconfirmed) and since',
    )
  }
  const replayed = await replayDeliveries(db, {
    enterpriseId,
    from: request.since,
    to: 'infinity',
    states: request.states,
  })
  return { replayed }
}

async function replayOne(db: Database, enterpriseId: number, deliveryId: number): Promise<number> {
  if ((await deliveryEnterprise(db, deliveryId)) !== enterpriseId) throw unknownDelivery(deliveryId)
  if ((await replayDeliveries(db, { deliveryId })) > 0) return 1
  const delivery = await getDelivery(db, deliveryId)
  throw new InvalidParameterError(
    'deliveryId',
    `delivery ${deliveryId} is ${delivery?.state}; only ${REPLAYABLE_STATES.join(', ')} deliveries can be replayed`,
  )
}

/** Another enterprise's delivery is as unknown as one that never was. */
function unknownDelivery(deliveryId: number): ApiError {
  return new ApiError(
    ResponseCode.NOT_FOUND,
    `no delivery ${deliveryId} of yours: deliveries/list shows your deliveries and their ids`,
  )
}

function partnerView(delivery: DeliveryView): PartnerDelivery {
  return {
    deliveryId: delivery.deliveryId,
    endpointId: delivery.endpointId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    audioId: delivery.audioId,
    state: delivery.state,
    createdAt: delivery.createdAt,
    attempts: delivery.attempts.map(({ startedAt, durationMs, httpStatus, answer }) => ({
      startedAt,
      durationMs: Math.round(durationMs),
      httpStatus,
      answer,
    })),
  }
}

const CURSOR = /^d(\d{1,15})$/

function cursorOf(deliveryId: number): string {
  return Buffer.from(`d${deliveryId}`).toString('base64url')
}

function cursorId(cursor: string): number {
  const match = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
  if (!match)
    throw new InvalidParameterError('cursor', 'is not a nextCursor this route answered: start without one')
  return Number(match[1])
}
