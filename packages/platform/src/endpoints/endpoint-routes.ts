import { EVENT_TYPES, InvalidParameterError, MAX_ENDPOINTS, ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { scopeOf, seen } from '../access/principal.js'
import type { PlatformContext } from '../context/platform-context.js'
import { listDeliveries } from '../deliveries/delivery-views.js'
import { PushUrlChange } from '../enterprises/enterprise-input.js'
import {
  existingEnterpriseId,
  noSuchEnterprise,
  requireEnabledEnterprise,
} from '../enterprises/enterprise-params.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import type { EventType } from '../recordings/recording-events.js'
import {
  addEndpointContract,
  listEndpointsContract,
  listEnterpriseEndpointsContract,
  removeEndpointContract,
  setPushUrlContract,
  showEndpointContract,
  updateEndpointContract,
} from './endpoint-contract.js'
import { EndpointChanges, endpointUrl, NewEndpoint } from './endpoint-input.js'
import {
  addEndpoint,
  type EndpointSettings,
  type EndpointView,
  getEndpoint,
  listEndpoints,
  removeEndpoint,
  replaceWithPushUrl,
  type UpdatedEndpoint,
  type UrlRule,
  updateEndpoint,
} from './endpoint-store.js'

/*
 * The operators' push endpoints: up to MAX_ENDPOINTS per enterprise, each a URL subscribed to event types,
 * enabled or held, optionally held to a rate. `set-push-url` (push-url-routes.ts) is the one-endpoint
 * shorthand.
 */

const RECENT_DELIVERIES = 20

const listEndpointsRoute = defineRoute(
  listEndpointsContract,
  (context: PlatformContext) => async (request) => ({
    endpoints: seen(await listEndpoints(context.db), scopeOf(request)),
  }),
)

const listEnterpriseEndpointsRoute = defineRoute(
  listEnterpriseEndpointsContract,
  (context: PlatformContext) =>
    async function listOfEnterprise(request) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      return { endpoints: await listEndpoints(context.db, enterpriseId) }
    },
)

const addEndpointRoute = defineRoute(
  addEndpointContract,
  (context: PlatformContext) =>
    async function add(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const body = NewEndpoint.parse(jsonObject(request.body))
      return addEndpointOf(context, enterpriseId, body)
    },
)

/** Adds an endpoint to an enabled enterprise once its URL passes the address policy; refuses past MAX_ENDPOINTS. */
export async function addEndpointOf(
  context: PlatformContext,
  enterpriseId: number,
  body: {
    url: string
    eventTypes?: EventType[]
    description?: string
    enabled?: boolean
    maxPerSecond?: number | null
  },
  rule: UrlRule = {},
): Promise<EndpointView> {
  await requireEnabledEnterprise(context.db, enterpriseId)
  const settings = {
    url: await endpointUrl(body.url, context.config),
    eventTypes: body.eventTypes ?? [...EVENT_TYPES],
    description: body.description ?? '',
    enabled: body.enabled ?? true,
    maxPerSecond: body.maxPerSecond ?? null,
  }
  const added = await addEndpoint(context.db, enterpriseId, settings, rule)
  if (added === 'url-of-another') throw urlOfAnother()
  if (added === 'no-enterprise') throw new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
  if (added === 'too-many') {
    throw new InvalidParameterError(
      'url',
      `enterprise ${enterpriseId} has ${MAX_ENDPOINTS} endpoints, the most it may have: remove one, or change one's URL`,
    )
  }
  return added
}

const showEndpointRoute = defineRoute(
  showEndpointContract,
  (context: PlatformContext) =>
    async function show(request) {
      const { enterpriseId, endpointId } = endpointParams(request)
      const endpoint = await getEndpoint(context.db, enterpriseId, endpointId)
      if (!endpoint) throw noSuchEndpoint(enterpriseId, endpointId)
      const recentDeliveries = await listDeliveries(context.db, { endpointId, limit: RECENT_DELIVERIES })
      return { endpoint, recentDeliveries }
    },
)

const updateEndpointRoute = defineRoute(
  updateEndpointContract,
  (context: PlatformContext) =>
    async function update(request) {
      const { enterpriseId, endpointId } = endpointParams(request)
      const { url, discardHeld, ...changes } = EndpointChanges.parse(jsonObject(request.body))
      if (discardHeld && changes.enabled !== true)
        throw new InvalidParameterError('discardHeld', 'may be given only with "enabled": true')
      const updated = await updateEndpointOf(
        context,
        enterpriseId,
        endpointId,
        { url, ...changes },
        { discardHeld: discardHeld ?? false },
      )
      return { ...updated.endpoint, discarded: updated.discarded }
    },
)

/** Changes an endpoint of the enterprise (its new URL once the address policy allows it); 4040 when it has none such. */
export async function updateEndpointOf(
  context: PlatformContext,
  enterpriseId: number,
  endpointId: number,
  { url, ...changes }: Partial<EndpointSettings> & { url?: string | undefined },
  options: { discardHeld?: boolean } & UrlRule = {},
): Promise<UpdatedEndpoint> {
  const updated = await updateEndpoint(
    context.db,
    enterpriseId,
    endpointId,
    { ...changes, ...(url !== undefined && { url: await endpointUrl(url, context.config) }) },
    options,
  )
  if (updated === 'url-of-another') throw urlOfAnother()
  if (!updated) throw noSuchEndpoint(enterpriseId, endpointId)
  return updated
}

function urlOfAnother(): InvalidParameterError {
  return new InvalidParameterError(
    'url',
    'is already an endpoint of another enterprise: give your own receiver URL, or ask your operator to share it',
  )
}

const removeEndpointRoute = defineRoute(
  removeEndpointContract,
  (context: PlatformContext) =>
    async function remove(request) {
      const { enterpriseId, endpointId } = endpointParams(request)
      const removed = await removeEndpoint(context.db, enterpriseId, endpointId)
      if (!removed) throw noSuchEndpoint(enterpriseId, endpointId)
      return { removed: endpointId, ...removed }
    },
)

const setPushUrlRoute = defineRoute(
  setPushUrlContract,
  (context: PlatformContext) =>
    async function setPushUrlHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const { pushUrl } = PushUrlChange.parse(jsonObject(request.body))
      const checked = await checkPushUrl(
        pushUrl,
        context.config.pushAllowPrivate,
        undefined,
        context.config.pushPorts,
      )
      // Its open deliveries go to the new URL (resumed if they were held), unless that one is disabled too.
      const replaced = await replaceWithPushUrl(context.db, enterpriseId, checked)
      if (!replaced) throw noSuchEnterprise(enterpriseId)
      return { enterpriseId, pushUrl: checked, ...replaced }
    },
)

export const endpointRoutes = [
  listEndpointsRoute,
  listEnterpriseEndpointsRoute,
  addEndpointRoute,
  showEndpointRoute,
  updateEndpointRoute,
  removeEndpointRoute,
  setPushUrlRoute,
]

function endpointParams(request: FastifyRequest): { enterpriseId: number; endpointId: number } {
  return { enterpriseId: idParam(request, 'enterpriseId'), endpointId: idParam(request, 'endpointId') }
}

export function noSuchEndpoint(enterpriseId: number, endpointId: number): ApiError {
  return new ApiError(
    ResponseCode.NOT_FOUND,
    `enterprise ${enterpriseId} has no endpoint ${endpointId}: \`earshot endpoints list --enterprise ${enterpriseId}\` shows its endpoints`,
  )
}
