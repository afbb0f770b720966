import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import Type from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import {
  EnterpriseParams,
  existingEnterpriseId,
  requireEnterprise,
} from '../enterprises/enterprise-params.js'
import { idParam, jsonObject, WITH_BODY, WITH_ID } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import { cancelDelivery } from './delivery-cancellations.js'
import {
  DeliveryListQuerySchema,
  deliveryListFilter,
  ReplayRangeSchema,
  replayRange,
  UnreceiptedReplaySchema,
  unreceiptedReplay,
} from './delivery-queries.js'
import { replayDeliveries } from './delivery-replays.js'
import { REPLAYABLE_STATES } from './delivery-store.js'
import { type DeliveryView, getDelivery, listDeliveries } from './delivery-views.js'
import {
  CancelledDeliverySchema,
  DeliveryListSchema,
  DeliverySchema,
  ReplayedDeliverySchema,
  ReplayedRangeSchema,
  UnreceiptedReplayAnswerSchema,
} from './push-answers.js'
import { countUnreceipted, replayUnreceipted } from './unreceipted-replay.js'

/*
 * The operators' view of push deliveries: list, show, replay, cancel. Replaying puts a failed, unconfirmed or
 * queued delivery back to pending, due now, with the same eventId (the partner dedups). An unreceipted replay
 * pushes again every delivery created since a time that was never receipted (acked, failed, unconfirmed);
 * pending and in-flight ones are left alone.
 */

const DeliveryParams = Type.Object({ deliveryId: Type.Integer({ minimum: 1, description: 'the delivery' }) })

const listDeliveriesRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listDeliveries'),
  tag: 'deliveries',
  summary: 'List deliveries with their attempts, newest first',
  query: DeliveryListQuerySchema,
  answer: { description: 'A page of deliveries', payload: { json: DeliveryListSchema } },
  refusals: [ResponseCode.INVALID_PARAMETER],
  handle: (context) => async (request) => ({
    deliveries: await listDeliveries(context.db, deliveryListFilter(request.query)),
  }),
}

const showDeliveryRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('showDelivery'),
  tag: 'deliveries',
  summary: 'Show a delivery with its attempts',
  params: DeliveryParams,
  answer: { description: 'The delivery', payload: { json: DeliverySchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function showDelivery(request) {
      const deliveryId = idParam(request, 'deliveryId')
      const delivery = await getDelivery(context.db, deliveryId)
      if (!delivery) throw noSuchDelivery(deliveryId)
      return delivery
    },
}

/**
 * Acts on one delivery, then explains a refusal from what the delivery is: no window between check and act.
 * Answers the delivery as it is after the act.
 */
async function actOnDelivery(
  context: PlatformContext,
  deliveryId: number,
  act: () => Promise<boolean>,
  rule: string,
): Promise<DeliveryView> {
  const acted = await act()
  const delivery = await getDelivery(context.db, deliveryId)
  if (!delivery) throw noSuchDelivery(deliveryId)
  if (!acted) throw new InvalidParameterError('state', `delivery ${deliveryId} is ${delivery.state}; ${rule}`)
  return delivery
}

const replayDeliveryRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('replayDelivery'),
  tag: 'deliveries',
  summary:
    'Replay a failed, unconfirmed or queued delivery: back to pending, due now, same eventId (a queued one ahead of the earlier events of its recording)',
  params: DeliveryParams,
  answer: { description: 'Replayed', payload: { json: ReplayedDeliverySchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function replayDelivery(request) {
      const deliveryId = idParam(request, 'deliveryId')
      const delivery = await actOnDelivery(
        context,
        deliveryId,
        async () => (await replayDeliveries(context.db, { deliveryId })) > 0,
        `only ${REPLAYABLE_LIST} deliveries can be replayed`,
      )
      return { deliveryId, replayed: true, delivery }
    },
}

const cancelDeliveryRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('cancelDelivery'),
  tag: 'deliveries',
  summary:
    'Cancel a delivery not yet confirmed: it is not pushed (again); one queued behind it goes when nothing before it is open',
  params: DeliveryParams,
  answer: { description: 'Cancelled', payload: { json: CancelledDeliverySchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function cancelDeliveryHandler(request) {
      const deliveryId = idParam(request, 'deliveryId')
      const delivery = await actOnDelivery(
        context,
        deliveryId,
        () => cancelDelivery(context.db, deliveryId),
        'only a delivery not yet confirmed nor cancelled can be cancelled',
      )
      return { deliveryId, cancelled: true, delivery }
    },
}

const replayRangeRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('replayRange'),
  tag: 'deliveries',
  summary: "Replay an enterprise's failed and unconfirmed deliveries created in a time range",
  params: EnterpriseParams,
  body: { json: ReplayRangeSchema },
  answer: { description: 'Replayed', payload: { json: ReplayedRangeSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function replayRangeHandler(request) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      const { from, to } = replayRange.parse(jsonObject(request.body, '{"from", "to"}'))
      const replayed = await replayDeliveries(context.db, { enterpriseId, from, to })
      return { enterpriseId, replayed }
    },
}

const replayUnreceiptedRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('replayUnreceipted'),
  tag: 'deliveries',
  summary: 'Push again every delivery never receipted since a time (or count them, with dryRun)',
  params: EnterpriseParams,
  body: { json: UnreceiptedReplaySchema },
  answer: { description: 'Counted (dryRun) or replayed', payload: { json: UnreceiptedReplayAnswerSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function replayUnreceiptedHandler(request) {
      const { db } = context
      const enterpriseId = idParam(request, 'enterpriseId')
      const body = unreceiptedReplay.parse(jsonObject(request.body, '{"since", "dryRun"}'))
      const { since, dryRun = false } = body
      await requireEnterprise(db, enterpriseId)
      if (dryRun) return { enterpriseId, since, ...(await countUnreceipted(db, enterpriseId, since)) }
      return { enterpriseId, since, ...(await replayUnreceipted(db, enterpriseId, since)) }
    },
}

export const deliveryRoutes = [
  listDeliveriesRoute,
  showDeliveryRoute,
  replayDeliveryRoute,
  cancelDeliveryRoute,
  replayRangeRoute,
  replayUnreceiptedRoute,
]

/** "failed, unconfirmed or queued" */
const REPLAYABLE_LIST = `${REPLAYABLE_STATES.slice(0, -1).join(', ')} or ${REPLAYABLE_STATES.at(-1)}`

function noSuchDelivery(deliveryId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no delivery ${deliveryId}`)
}
