import { ResponseCode, routeContract } from '@earshot/protocol'
import { DeliveryLogSchema, ReplayableSchema } from '../deliveries/delivery-answers.js'
import { DeliveryLogQuerySchema, ReplayableQuerySchema } from '../deliveries/delivery-queries.js'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { WITH_ID } from '../http/admin-refusals.js'
import { OverviewSchema } from './overview-answer.js'

/* The admin routes the operators' console reads beyond the ones the CLI uses. */

export const overviewContract = routeContract({
  method: 'GET',
  path: '/admin/v1/overview',
  operationId: 'overview',
  tag: 'console',
  summary: 'Deliveries by state, the last hour of push attempts, queue depth and push URL health',
  answer: { description: 'The figures', payload: { json: OverviewSchema } },
  refusals: [],
  permission: 'operations.read',
})

export const deliveryLogContract = routeContract({
  method: 'GET',
  path: '/admin/v1/delivery-log',
  operationId: 'deliveryLog',
  tag: 'console',
  summary: "List deliveries as GET /deliveries does, also by creation time, with the next page's cursor",
  query: DeliveryLogQuerySchema,
  answer: { description: 'A page of deliveries', payload: { json: DeliveryLogSchema } },
  refusals: [ResponseCode.INVALID_PARAMETER],
  permission: 'deliveries.read',
})

export const countReplayableContract = routeContract({
  method: 'GET',
  path: '/admin/v1/enterprises/:enterpriseId/deliveries/replayable',
  operationId: 'countReplayable',
  tag: 'console',
  summary: 'Count what a range replay with these bounds would replay now',
  params: EnterpriseParams,
  query: ReplayableQuerySchema,
  answer: { description: 'The count', payload: { json: ReplayableSchema } },
  refusals: WITH_ID,
  permission: 'deliveries.read',
})

export const consoleContracts = [overviewContract, deliveryLogContract, countReplayableContract] as const
