import { ResponseCode, routeContract } from '@earshot/protocol'
import Type from 'typebox'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import {
  CancelledDeliverySchema,
  DeliveryListSchema,
  DeliverySchema,
  ReplayedDeliverySchema,
  ReplayedRangeSchema,
  UnreceiptedReplayAnswerSchema,
} from './delivery-answers.js'
import { DeliveryListQuerySchema, ReplayRangeSchema, UnreceiptedReplaySchema } from './delivery-queries.js'

/* The operators' push deliveries: list, show, replay, cancel; replay a range, or what was never receipted. */

export const DeliveryParams = Type.Object({
  deliveryId: Type.Integer({ minimum: 1, description: 'the delivery' }),
})

export const listDeliveriesContract = routeContract({
  method: 'GET',
  path: '/admin/v1/deliveries',
  operationId: 'listDeliveries',
  tag: 'deliveries',
  summary: 'List deliveries with their attempts, newest first',
  query: DeliveryListQuerySchema,
  answer: { description: 'A page of deliveries', payload: { json: DeliveryListSchema } },
  refusals: [ResponseCode.INVALID_PARAMETER],
  permission: 'deliveries.read',
})

export const showDeliveryContract = routeContract({
  method: 'GET',
  path: '/admin/v1/deliveries/:deliveryId',
  operationId: 'showDelivery',
  tag: 'deliveries',
  summary: 'Show a delivery with its attempts',
  params: DeliveryParams,
  answer: { description: 'The delivery', payload: { json: DeliverySchema } },
  refusals: WITH_ID,
  permission: 'deliveries.read',
})

export const replayDeliveryContract = routeContract({
  method: 'POST',
  path: '/admin/v1/deliveries/:deliveryId/replay',
  operationId: 'replayDelivery',
  tag: 'deliveries',
  summary:
    'Replay a failed, unconfirmed or queued delivery: back to pending, due now, same eventId (a queued one ahead of the earlier events of its recording)',
  params: DeliveryParams,
  answer: { description: 'Replayed', payload: { json: ReplayedDeliverySchema } },
  refusals: WITH_ID,
  permission: 'deliveries.replay',
})

export const cancelDeliveryContract = routeContract({
  method: 'POST',
  path: '/admin/v1/deliveries/:deliveryId/cancel',
  operationId: 'cancelDelivery',
  tag: 'deliveries',
  summary:
    'Cancel a delivery not yet confirmed: it is not pushed (again); one queued behind it goes when nothing before it is open',
  params: DeliveryParams,
  answer: { description: 'Cancelled', payload: { json: CancelledDeliverySchema } },
  refusals: WITH_ID,
  permission: 'deliveries.replay',
})

export const replayRangeContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/deliveries/replay',
  operationId: 'replayRange',
  tag: 'deliveries',
  summary: "Replay an enterprise's failed and unconfirmed deliveries created in a time range",
  params: EnterpriseParams,
  body: { json: ReplayRangeSchema },
  answer: { description: 'Replayed', payload: { json: ReplayedRangeSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'deliveries.replay',
})

export const replayUnreceiptedContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/deliveries/replay-unreceipted',
  operationId: 'replayUnreceipted',
  tag: 'deliveries',
  summary: 'Push again every delivery never receipted since a time (or count them, with dryRun)',
  params: EnterpriseParams,
  body: { json: UnreceiptedReplaySchema },
  answer: { description: 'Counted (dryRun) or replayed', payload: { json: UnreceiptedReplayAnswerSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'deliveries.replay',
})

export const deliveryContracts = [
  listDeliveriesContract,
  showDeliveryContract,
  replayDeliveryContract,
  cancelDeliveryContract,
  replayRangeContract,
  replayUnreceiptedContract,
] as const
