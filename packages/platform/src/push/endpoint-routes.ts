import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import {
  EnterpriseParams,
  existingEnterpriseId,
  requireEnabledEnterprise,
} from '../enterprises/enterprise-params.js'
import { idParam, jsonObject, WITH_BODY, WITH_ID } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import { listDeliveries } from './delivery-views.js'
import {
  EndpointDetailSchema,
  EndpointListSchema,
  EndpointSchema,
  RemovedEndpointSchema,
  UpdatedEndpointSchema,
} from './endpoint-answers.js'
import {
  ALL_EVENT_TYPES,
  EndpointChanges,
  EndpointChangesSchema,
  EndpointParams,
  endpointUrl,
  MAX_ENDPOINTS,
  NewEndpoint,
  NewEndpointSchema,
} from './endpoint-input.js'
import { addEndpoint, getEndpoint, listEndpoints, removeEndpoint, updateEndpoint } from './endpoint-store.js'

/*
 * The operators' push endpoints: up to MAX_ENDPOINTS per enterprise, each a URL subscribed to event types,
 * enabled or held, optionally held to a rate. `set-push-url` (push-url-routes.ts) is the one-endpoint
 * shorthand.
 */

const RECENT_DELIVERIES = 20

const listEndpointsRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listEndpoints'),
  tag: 'endpoints',
  summary: "Every enterprise's push endpoints, with their URL's health",
  answer: { description: 'By enterprise', payload: { json: EndpointListSchema } },
  refusals: [],
  handle: (context) => async () => ({ endpoints: await listEndpoints(context.db) }),
}

const listEnterpriseEndpointsRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listEnterpriseEndpoints'),
  tag: 'endpoints',
  summary: "An enterprise's push endpoints, with their URL's health",
  params: EnterpriseParams,
  answer: { description: 'In the order they were added', payload: { json: EndpointListSchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function listOfEnterprise(request) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      return { endpoints: await listEndpoints(context.db, enterpriseId) }
    },
}

const addEndpointRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('addEndpoint'),
  tag: 'endpoints',
  summary: `Add a push endpoint (at most ${MAX_ENDPOINTS} per enterprise)`,
  params: EnterpriseParams,
  body: { json: NewEndpointSchema },
  answer: { status: 201, description: 'Added', payload: { json: EndpointSchema } },
  refusals: [...WITH_BODY, ResponseCode.FORBIDDEN, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function add(request, reply) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const body = NewEndpoint.parse(jsonObject(request.body))
      await requireEnabledEnterprise(context.db, enterpriseId)
      const added = await addEndpoint(context.db, enterpriseId, {
        url: await endpointUrl(body.url, context.config),
        eventTypes: body.eventTypes ?? ALL_EVENT_TYPES,
        description: body.description ?? '',
        enabled: body.enabled ?? true,
        maxPerSecond: body.maxPerSecond ?? null,
      })
      if (added === 'no-enterprise')
        throw new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
      if (added === 'too-many') {
        throw new InvalidParameterError(
          'url',
          `enterprise ${enterpriseId} has ${MAX_ENDPOINTS} endpoints, the most it may have: remove one, or change one's URL`,
        )
      }
      return reply.code(201).send(added)
    },
}

const showEndpointRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('showEndpoint'),
  tag: 'endpoints',
  summary: 'A push endpoint, with its recent deliveries and their attempts',
  params: EndpointParams,
  answer: { description: 'The endpoint', payload: { json: EndpointDetailSchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function show(request) {
      const { enterpriseId, endpointId } = endpointParams(request)
      const endpoint = await getEndpoint(context.db, enterpriseId, endpointId)
      if (!endpoint) throw noSuchEndpoint(enterpriseId, endpointId)
      const recentDeliveries = await listDeliveries(context.db, { endpointId, limit: RECENT_DELIVERIES })
      return { endpoint, recentDeliveries }
    },
}

const updateEndpointRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('updateEndpoint'),
  tag: 'endpoints',
  summary:
    'Change a push endpoint: its open deliveries stay its own (to a new URL they go there; enabled again, those it held resume, or are cancelled with discardHeld)',
  params: EndpointParams,
  body: { json: EndpointChangesSchema },
  answer: { description: 'As it is now', payload: { json: UpdatedEndpointSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function update(request) {
      const { enterpriseId, endpointId } = endpointParams(request)
      const { url, discardHeld, ...changes } = EndpointChanges.parse(jsonObject(request.body))
      if (discardHeld && changes.enabled !== true)
        throw new InvalidParameterError('discardHeld', 'may be given only with "enabled": true')
      const updated = await updateEndpoint(
        context.db,
        enterpriseId,
        endpointId,
        {
          ...changes,
          ...(url !== undefined && { url: await endpointUrl(url, context.config) }),
        },
        { discardHeld: discardHeld ?? false },
      )
      if (!updated) throw noSuchEndpoint(enterpriseId, endpointId)
      return { ...updated.endpoint, discarded: updated.discarded }
    },
}

const removeEndpointRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('removeEndpoint'),
  tag: 'endpoints',
  summary:
    'Remove a push endpoint: nothing more is pushed to it, its deliveries not yet confirmed are cancelled',
  params: EndpointParams,
  answer: { description: 'Removed', payload: { json: RemovedEndpointSchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function remove(request) {
      const { enterpriseId, endpointId } = endpointParams(request)
      const removed = await removeEndpoint(context.db, enterpriseId, endpointId)
      if (!removed) throw noSuchEndpoint(enterpriseId, endpointId)
      return { removed: endpointId, ...removed }
    },
}

export const endpointRoutes = [
  listEndpointsRoute,
  listEnterpriseEndpointsRoute,
  addEndpointRoute,
  showEndpointRoute,
  updateEndpointRoute,
  removeEndpointRoute,
]

function endpointParams(request: FastifyRequest): { enterpriseId: number; endpointId: number } {
  return { enterpriseId: idParam(request, 'enterpriseId'), endpointId: idParam(request, 'endpointId') }
}

function noSuchEndpoint(enterpriseId: number, endpointId: number): ApiError {
  return new ApiError(
    ResponseCode.NOT_FOUND,
    `enterprise ${enterpriseId} has no endpoint ${endpointId}: \`earshot endpoints list --enterprise ${enterpriseId}\` shows its endpoints`,
  )
}
