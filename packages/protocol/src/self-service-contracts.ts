import type { TSchema } from 'typebox'
import { EndpointSchema, ReceiverCheckReportSchema } from './endpoint-messages.js'
import { ResponseCode, type ResponseCodeValue } from './error-catalogue.js'
import { BEARER_REFUSALS } from './partner-refusals.js'
import { routeContract } from './route-contract.js'
import {
  DeliveryListRequestSchema,
  DeliveryPageSchema,
  DeliveryReplayRequestSchema,
  EndpointAddRequestSchema,
  EndpointCheckRequestSchema,
  EndpointListRequestSchema,
  EndpointListSchema,
  EndpointRemovedSchema,
  EndpointRemoveRequestSchema,
  EndpointUpdateRequestSchema,
  KeyRotateRequestSchema,
  LevelsRequestSchema,
  LevelsSchema,
  PortalLinkRequestSchema,
  PortalLinkSchema,
  ReplayedSchema,
  RotatedKeySchema,
} from './self-service-messages.js'

/*
 * The routes a partner manages its own integration with: sealed like every partner request, each a POST
 * under /openapi/v1. The portal serves the same actions to a browser session (its paths under /portal/api).
 */

interface SelfService<Id extends string, Request extends TSchema, Result extends TSchema> {
  operationId: Id
  /** After /openapi/v1/ (and /portal/api/ in the portal). */
  action: string
  summary: string
  description?: string
  request: Request
  result: Result
  refusals?: readonly ResponseCodeValue[]
}

function selfService<const Id extends string, Request extends TSchema, Result extends TSchema>(
  spec: SelfService<Id, Request, Result>,
) {
  return routeContract({
    method: 'POST',
    path: `/openapi/v1/${spec.action}`,
    operationId: spec.operationId,
    tag: 'self-service',
    summary: spec.summary,
    ...(spec.description && { description: spec.description }),
    body: { sealed: spec.request },
    answer: { description: spec.summary, payload: { result: spec.result, sealed: true } },
    refusals: [...BEARER_REFUSALS, ...(spec.refusals ?? [])],
  })
}

const UNKNOWN = [ResponseCode.NOT_FOUND]

export const listEndpointsContract = selfService({
  operationId: 'listEndpoints',
  action: 'endpoints/list',
  summary: "List the enterprise's push endpoints with their health",
  request: EndpointListRequestSchema,
  result: EndpointListSchema,
})

export const addEndpointContract = selfService({
  operationId: 'addEndpoint',
  action: 'endpoints/add',
  summary: 'Add a push endpoint',
  description: "At most 10 per enterprise; the URL must pass the address policy, as an operator's would.",
  request: EndpointAddRequestSchema,
  result: EndpointSchema,
})

export const updateEndpointContract = selfService({
  operationId: 'updateEndpoint',
  action: 'endpoints/update',
  summary: 'Change a push endpoint: URL, event types, description, rate, or enable/disable it',
  description: 'Disabling holds its deliveries; enabling resumes them in order.',
  request: EndpointUpdateRequestSchema,
  result: EndpointSchema,
  refusals: UNKNOWN,
})

export const removeEndpointContract = selfService({
  operationId: 'removeEndpoint',
  action: 'endpoints/remove',
  summary: 'Remove a push endpoint; its deliveries not yet confirmed are cancelled',
  request: EndpointRemoveRequestSchema,
  result: EndpointRemovedSchema,
  refusals: UNKNOWN,
})

export const checkEndpointContract = selfService({
  operationId: 'checkEndpoint',
  action: 'endpoints/check',
  summary: 'Run the receiver check on a URL and read its report',
  description:
    "Pushes a scripted series to the URL, sealed with the enterprise's current key and marked X-Earshot-Check: 1 (audioIds beginning check_), and reports each item with what came back. Answers once the last receipt callback arrived or its time passed; 4290 with Retry-After while too many checks run.",
  request: EndpointCheckRequestSchema,
  result: ReceiverCheckReportSchema,
})

export const listDeliveriesContract = selfService({
  operationId: 'listDeliveries',
  action: 'deliveries/list',
  summary: 'List deliveries with their attempts, newest first',
  request: DeliveryListRequestSchema,
  result: DeliveryPageSchema,
})

export const replayDeliveriesContract = selfService({
  operationId: 'replayDeliveries',
  action: 'deliveries/replay',
  summary: 'Push again one delivery, or every failed or unconfirmed one since a time',
  description:
    'Same eventId: a receiver that dedups stores nothing twice. One delivery may be failed, unconfirmed or queued; a replay since a time takes the states given.',
  request: DeliveryReplayRequestSchema,
  result: ReplayedSchema,
  refusals: UNKNOWN,
})

export const readLevelsContract = selfService({
  operationId: 'readLevels',
  action: 'levels',
  summary: 'Read the delivery service levels of the last 24 hours or 7 days',
  request: LevelsRequestSchema,
  result: LevelsSchema,
})

export const rotateKeyContract = selfService({
  operationId: 'rotateKey',
  action: 'key/rotate',
  summary: "Rotate the enterprise's key",
  description:
    'The answer is sealed with the key of the request; the new secret is shown once. The previous keyVersion stays valid for the grace period (EARSHOT_KEY_GRACE); seal with the new one from now on.',
  request: KeyRotateRequestSchema,
  result: RotatedKeySchema,
})

export const mintPortalLinkContract = selfService({
  operationId: 'mintPortalLink',
  action: 'portal/link',
  summary: 'Mint a one-time link into the partner portal',
  description: 'The link opens a portal session for this enterprise; it expires unused and works once.',
  request: PortalLinkRequestSchema,
  result: PortalLinkSchema,
})

/**
 * The routes a second copy of would act twice (another endpoint, another rotation, another replay or check):
 * a client sends one again only after a refusal that shows nothing was done (a connection never made, 5030,
 * 4290), never after a timeout or a lost answer.
 */
export const AT_MOST_ONCE: ReadonlySet<{ operationId: string }> = new Set([
  addEndpointContract,
  removeEndpointContract,
  checkEndpointContract,
  replayDeliveriesContract,
  rotateKeyContract,
])

/** Every self-service route; the portal serves all but the link itself. */
export const selfServiceContracts = [
  listEndpointsContract,
  addEndpointContract,
  updateEndpointContract,
  removeEndpointContract,
  checkEndpointContract,
  listDeliveriesContract,
  replayDeliveriesContract,
  readLevelsContract,
  rotateKeyContract,
  mintPortalLinkContract,
] as const
