import { MAX_ENDPOINTS, ResponseCode, routeContract } from '@earshot/protocol'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { PushUrlChangeSchema } from '../enterprises/enterprise-input.js'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import {
  EndpointDetailSchema,
  EndpointListSchema,
  EndpointSchema,
  PushUrlSetSchema,
  RemovedEndpointSchema,
  UpdatedEndpointSchema,
} from './endpoint-answers.js'
import { EndpointChangesSchema, EndpointParams, NewEndpointSchema } from './endpoint-input.js'

/* The operators' push endpoints: up to MAX_ENDPOINTS per enterprise, each a URL subscribed to event types. */

export const listEndpointsContract = routeContract({
  method: 'GET',
  path: '/admin/v1/endpoints',
  operationId: 'listEndpoints',
  tag: 'endpoints',
  summary: "Every enterprise's push endpoints, with their URL's health",
  answer: { description: 'By enterprise', payload: { json: EndpointListSchema } },
  refusals: [],
  permission: 'endpoints.read',
})

export const listEnterpriseEndpointsContract = routeContract({
  method: 'GET',
  path: '/admin/v1/enterprises/:enterpriseId/endpoints',
  operationId: 'listEnterpriseEndpoints',
  tag: 'endpoints',
  summary: "An enterprise's push endpoints, with their URL's health",
  params: EnterpriseParams,
  answer: { description: 'In the order they were added', payload: { json: EndpointListSchema } },
  refusals: WITH_ID,
  permission: 'endpoints.read',
})

export const addEndpointContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/endpoints',
  operationId: 'addEndpoint',
  tag: 'endpoints',
  summary: `Add a push endpoint (at most ${MAX_ENDPOINTS} per enterprise)`,
  params: EnterpriseParams,
  body: { json: NewEndpointSchema },
  answer: { status: 201, description: 'Added', payload: { json: EndpointSchema } },
  refusals: [...WITH_BODY, ResponseCode.FORBIDDEN, ResponseCode.NOT_FOUND],
  permission: 'endpoints.write',
})

export const showEndpointContract = routeContract({
  method: 'GET',
  path: '/admin/v1/enterprises/:enterpriseId/endpoints/:endpointId',
  operationId: 'showEndpoint',
  tag: 'endpoints',
  summary: 'A push endpoint, with its recent deliveries and their attempts',
  params: EndpointParams,
  answer: { description: 'The endpoint', payload: { json: EndpointDetailSchema } },
  refusals: WITH_ID,
  permission: 'endpoints.read',
})

export const updateEndpointContract = routeContract({
  method: 'PATCH',
  path: '/admin/v1/enterprises/:enterpriseId/endpoints/:endpointId',
  operationId: 'updateEndpoint',
  tag: 'endpoints',
  summary:
    'Change a push endpoint: its open deliveries stay its own (to a new URL they go there; enabled again, those it held resume, or are cancelled with discardHeld)',
  params: EndpointParams,
  body: { json: EndpointChangesSchema },
  answer: { description: 'As it is now', payload: { json: UpdatedEndpointSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'endpoints.write',
})

export const removeEndpointContract = routeContract({
  method: 'DELETE',
  path: '/admin/v1/enterprises/:enterpriseId/endpoints/:endpointId',
  operationId: 'removeEndpoint',
  tag: 'endpoints',
  summary:
    'Remove a push endpoint: nothing more is pushed to it, its deliveries not yet confirmed are cancelled',
  params: EndpointParams,
  answer: { description: 'Removed', payload: { json: RemovedEndpointSchema } },
  refusals: WITH_ID,
  permission: 'endpoints.write',
})

export const setPushUrlContract = routeContract({
  method: 'PUT',
  path: '/admin/v1/enterprises/:enterpriseId/push-url',
  operationId: 'setPushUrl',
  tag: 'enterprises',
  summary: 'Set or clear the push URL: the enterprise then has one endpoint, for every event type (or none)',
  params: EnterpriseParams,
  body: { json: PushUrlChangeSchema },
  answer: { description: 'Set', payload: { json: PushUrlSetSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'endpoints.write',
})

export const endpointContracts = [
  listEndpointsContract,
  listEnterpriseEndpointsContract,
  addEndpointContract,
  showEndpointContract,
  updateEndpointContract,
  removeEndpointContract,
  setPushUrlContract,
] as const
