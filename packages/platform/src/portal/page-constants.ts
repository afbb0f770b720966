import {
  type DeliveryListRequestSchema,
  type DeliveryPageSchema,
  type DeliveryReplayRequestSchema,
  type EndpointAddRequestSchema,
  type EndpointCheckRequestSchema,
  type EndpointListSchema,
  type EndpointRemovedSchema,
  type EndpointRemoveRequestSchema,
  type EndpointSchema,
  type EndpointUpdateRequestSchema,
  type Levels,
  type LevelsRequestSchema,
  type PartnerDelivery,
  type ReceiverCheckReportSchema,
  type ReplayedSchema,
  ResponseCode,
  type RotatedKeySchema,
} from '@earshot/protocol'
import type { Static } from 'typebox'
import type { portalSessionContract } from './portal-contract.js'

/*
 * The API's names and codes the partner portal's page uses, and the shapes of what it sends and reads. The
 * browser cannot load this module's imports: portal-page.ts serves its values as plain data, under this
 * name; its types are the page's (packages/platform/portal/page-constants.d.ts).
 */

/** A delivery's states, as the deliveries filter offers them; those a replay since a time may take. */
export { DELIVERY_STATES, EVENT_TYPES, LEVEL_WINDOWS, REPLAY_STATES } from '@earshot/protocol'

/** The session has ended or expired (or there is none): the page stops and says to open a new link. */
export const SESSION_ENDED = ResponseCode.UNAUTHORIZED

/** The portal session, as GET /portal/api/session answers it. */
export type PortalSession = Static<(typeof portalSessionContract)['answer']['payload']['json']>

export type Endpoint = Static<typeof EndpointSchema>
export type { Levels, PartnerDelivery }
export type ReceiverCheckReport = Static<typeof ReceiverCheckReportSchema>
export type DeliveryFilter = Static<typeof DeliveryListRequestSchema>

/** Each action of /portal/api/: the plain JSON it takes, and what it answers (as the sealed routes do). */
export interface PortalActions {
  'endpoints/list': [Record<string, never>, Static<typeof EndpointListSchema>]
  'endpoints/add': [Static<typeof EndpointAddRequestSchema>, Endpoint]
  'endpoints/update': [Static<typeof EndpointUpdateRequestSchema>, Endpoint]
  'endpoints/remove': [Static<typeof EndpointRemoveRequestSchema>, Static<typeof EndpointRemovedSchema>]
  'endpoints/check': [Static<typeof EndpointCheckRequestSchema>, ReceiverCheckReport]
  'deliveries/list': [DeliveryFilter, Static<typeof DeliveryPageSchema>]
  'deliveries/replay': [Static<typeof DeliveryReplayRequestSchema>, Static<typeof ReplayedSchema>]
  levels: [Static<typeof LevelsRequestSchema>, Levels]
  'key/rotate': [Record<string, never>, Static<typeof RotatedKeySchema>]
}
export type PortalAction = keyof PortalActions
