import {
  addEndpointContract,
  checkEndpointContract,
  EndpointAddRequestSchema,
  EndpointListRequestSchema,
  EndpointRemoveRequestSchema,
  EndpointUpdateRequestSchema,
  eventTypeNamed,
  KeyRotateRequestSchema,
  LevelsRequestSchema,
  listDeliveriesContract,
  listEndpointsContract,
  messageParser,
  type PortalAccess,
  ResponseCode,
  type RouteContract,
  readLevelsContract,
  removeEndpointContract,
  replayDeliveriesContract,
  rotateKeyContract,
  updateEndpointContract,
} from '@earshot/protocol'
import type { FastifyReply } from 'fastify'
import type { PlatformContext } from '../context/platform-context.js'
import { addEndpointOf, updateEndpointOf } from '../endpoints/endpoint-routes.js'
import { listEndpoints, removeEndpoint } from '../endpoints/endpoint-store.js'
import { rotateEnterpriseKey } from '../enterprises/enterprise-routes.js'
import { ApiError } from '../http/api-error.js'
import { runReceiverCheck } from '../receiver-check/receiver-check-route.js'
import type { EventType } from '../recordings/recording-events.js'
import { listPartnerDeliveries, replayPartnerDeliveries } from './partner-deliveries.js'
import { LevelsCache } from './service-levels.js'

/*
 * What a partner may do to its own integration, one row per action: the partner API serves each as a sealed
 * route, the portal as a JSON route. Every action is bounded to the caller's enterprise: another's ids are
 * as unknown as ids that never were.
 */

/** One call of an action: the platform (its database audited for a change), whose, and the reply (a check stops when it closes). */
export interface SelfServiceCall {
  context: PlatformContext
  enterpriseId: number
  reply: FastifyReply
}

export interface SelfServiceAction {
  contract: RouteContract
  /** The least portal access that may call it. */
  access: PortalAccess
  /** Whether it changes something, and so is recorded in the audit trail. */
  changes: boolean
  run(call: SelfServiceCall, body: unknown): Promise<object>
}

const EndpointListRequest = messageParser(EndpointListRequestSchema)
const EndpointAddRequest = messageParser(EndpointAddRequestSchema)
const EndpointUpdateRequest = messageParser(EndpointUpdateRequestSchema)
const EndpointRemoveRequest = messageParser(EndpointRemoveRequestSchema)
const LevelsRequest = messageParser(LevelsRequestSchema)
const KeyRotateRequest = messageParser(KeyRotateRequestSchema)

const levelsCaches = new WeakMap<PlatformContext['db'], LevelsCache>()

export const selfServiceActions: readonly SelfServiceAction[] = [
  {
    contract: listEndpointsContract,
    access: 'view',
    changes: false,
    async run({ context, enterpriseId }, body) {
      EndpointListRequest.parse(body)
      return { items: await listEndpoints(context.db, enterpriseId) }
    },
  },
  {
    contract: addEndpointContract,
    access: 'manage',
    changes: true,
    async run({ context, enterpriseId }, body) {
      const { eventTypes, issuedAt: _issuedAt, ...settings } = EndpointAddRequest.parse(body)
      const named = { ...settings, eventTypes: eventTypes?.map(knownEventType) }
      return addEndpointOf(context, enterpriseId, named, { ownUrl: true })
    },
  },
  {
    contract: updateEndpointContract,
    access: 'manage',
    changes: true,
    async run({ context, enterpriseId }, body) {
      const { endpointId, eventTypes, issuedAt: _issuedAt, ...changes } = EndpointUpdateRequest.parse(body)
      const updated = await unknownEndpointAs(endpointId, () =>
        updateEndpointOf(
          context,
          enterpriseId,
          endpointId,
          { ...changes, ...(eventTypes && { eventTypes: eventTypes.map(knownEventType) }) },
          { ownUrl: true },
        ),
      )
      return updated.endpoint
    },
  },
  {
    contract: removeEndpointContract,
    access: 'manage',
    changes: true,
    async run({ context, enterpriseId }, body) {
      const { endpointId } = EndpointRemoveRequest.parse(body)
      const removed = await removeEndpoint(context.db, enterpriseId, endpointId)
      if (!removed) throw unknownEndpoint(endpointId)
      return { endpointId, cancelled: removed.cancelled }
    },
  },
  {
    contract: checkEndpointContract,
    access: 'manage',
    changes: true,
    run({ context, enterpriseId, reply }, body) {
      const { issuedAt: _issuedAt, ...check } = (body ?? {}) as Record<string, unknown>
      return runReceiverCheck(context, enterpriseId, check, reply)
    },
  },
  {
    contract: listDeliveriesContract,
    access: 'view',
    changes: false,
    run: ({ context, enterpriseId }, body) => listPartnerDeliveries(context.db, enterpriseId, body),
  },
  {
    contract: replayDeliveriesContract,
    access: 'manage',
    changes: true,
    run: ({ context, enterpriseId }, body) => replayPartnerDeliveries(context.db, enterpriseId, body),
  },
  {
    contract: readLevelsContract,
    access: 'view',
    changes: false,
    run({ context, enterpriseId }, body) {
      const { window } = LevelsRequest.parse(body)
      let cache = levelsCaches.get(context.db)
      if (!cache) {
        cache = new LevelsCache(context.db, context.clock, levelsMargin(context))
        levelsCaches.set(context.db, cache)
      }
      return cache.read(enterpriseId, window)
    },
  },
  {
    contract: rotateKeyContract,
    access: 'manage',
    changes: true,
    async run({ context, enterpriseId }, body) {
      KeyRotateRequest.parse(body)
      const { keyVersion, secret } = await rotateEnterpriseKey(context, enterpriseId)
      return { keyVersion, secret }
    },
  },
]

/** How long after the time it carries an attempt's row may commit: its push's timeout, then a minute. */
function levelsMargin(context: PlatformContext): number {
  return (context.config.pushTimeoutSeconds + 60) * 1000
}

/** An event type its schema has already checked, by its full or short name. */
function knownEventType(name: string): EventType {
  return eventTypeNamed(name) as EventType
}

function unknownEndpoint(endpointId: number): ApiError {
  return new ApiError(
    ResponseCode.NOT_FOUND,
    `no endpoint ${endpointId} of yours: endpoints/list shows your endpoints and their ids`,
  )
}

/** Runs fn, answering the partner's own 4040 for an endpoint it has not (the operators' names their CLI). */
async function unknownEndpointAs<T>(endpointId: number, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    if (error instanceof ApiError && error.code === ResponseCode.NOT_FOUND) throw unknownEndpoint(endpointId)
    throw error
  }
}
