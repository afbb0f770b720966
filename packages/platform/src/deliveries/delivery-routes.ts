import { InvalidParameterError } from '@earshot/protocol'
import { scopeOf } from '../access/principal.js'
import type { PlatformContext } from '../context/platform-context.js'
import { existingEnterpriseId, requireEnterprise } from '../enterprises/enterprise-params.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { defineRoute } from '../http/route-spec.js'
import { cancelDelivery } from './delivery-cancellations.js'
import {
  cancelDeliveryContract,
  listDeliveriesContract,
  replayDeliveryContract,
  replayRangeContract,
  replayUnreceiptedContract,
  showDeliveryContract,
} from './delivery-contract.js'
import { noSuchDelivery } from './delivery-owner.js'
import { deliveryListFilter, replayRange, unreceiptedReplay } from './delivery-queries.js'
import { replayDeliveries } from './delivery-replays.js'
import { REPLAYABLE_STATES } from './delivery-store.js'
import { type DeliveryView, getDelivery, listDeliveries } from './delivery-views.js'
import { countUnreceipted, replayUnreceipted } from './unreceipted-replay.js'

/*
 * The operators' view of push deliveries: list, show, replay, cancel. Replaying puts a failed, unconfirmed or
 * queued delivery back to pending, due now, with the same eventId (the partner dedups). An unreceipted replay
 * pushes again every delivery created since a time that was never receipted (acked, failed, unconfirmed);
 * pending and in-flight ones are left alone.
 */

const listDeliveriesRoute = defineRoute(
  listDeliveriesContract,
  (context: PlatformContext) => async (request) => ({
    deliveries: await listDeliveries(context.db, {
      ...deliveryListFilter(request.query),
      enterprises: scopeOf(request),
    }),
  }),
)

const showDeliveryRoute = defineRoute(
  showDeliveryContract,
  (context: PlatformContext) =>
    async function showDelivery(request) {
      const deliveryId = idParam(request, 'deliveryId')
      const delivery = await getDelivery(context.db, deliveryId)
      if (!delivery) throw noSuchDelivery(deliveryId)
      return delivery
    },
)

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

const replayDeliveryRoute = defineRoute(
  replayDeliveryContract,
  (context: PlatformContext) =>
    async function replayDelivery(request) {
      const deliveryId = idParam(request, 'deliveryId')
      const delivery = await actOnDelivery(
        context,
        deliveryId,
        async () => (await replayDeliveries(context.db, { deliveryId })) > 0,
        `only ${REPLAYABLE_LIST} deliveries can be replayed`,
      )
      return { deliveryId, replayed: true as const, delivery }
    },
)

const cancelDeliveryRoute = defineRoute(
  cancelDeliveryContract,
  (context: PlatformContext) =>
    async function cancelDeliveryHandler(request) {
      const deliveryId = idParam(request, 'deliveryId')
      const delivery = await actOnDelivery(
        context,
        deliveryId,
        () => cancelDelivery(context.db, deliveryId),
        'only a delivery not yet confirmed nor cancelled can be cancelled',
      )
      return { deliveryId, cancelled: true as const, delivery }
    },
)

const replayRangeRoute = defineRoute(
  replayRangeContract,
  (context: PlatformContext) =>
    async function replayRangeHandler(request) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      const { from, to } = replayRange.parse(jsonObject(request.body, '{"from", "to"}'))
      const replayed = await replayDeliveries(context.db, { enterpriseId, from, to })
      return { enterpriseId, replayed }
    },
)

const replayUnreceiptedRoute = defineRoute(
  replayUnreceiptedContract,
  (context: PlatformContext) =>
    async function replayUnreceiptedHandler(request) {
      const { db } = context
      const enterpriseId = idParam(request, 'enterpriseId')
      const body = unreceiptedReplay.parse(jsonObject(request.body, '{"since", "dryRun"}'))
      const { since, dryRun = false } = body
      await requireEnterprise(db, enterpriseId)
      if (dryRun) return { enterpriseId, since, ...(await countUnreceipted(db, enterpriseId, since)) }
      return { enterpriseId, since, ...(await replayUnreceipted(db, enterpriseId, since)) }
    },
)

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
