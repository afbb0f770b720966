import {
  type DeliveryListRequestSchema,
  type EndpointSchema,
  type Levels,
  mintPortalLinkContract,
  type PartnerDelivery,
  type ReceiverCheckReportSchema,
  ResponseCode,
  selfServiceContracts,
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

/**
 * A session refused: none, ended or expired; or, to a POST, not the session's CSRF token (the page reads
 * the session again to tell which).
 */
export const SESSION_REFUSED = ResponseCode.UNAUTHORIZED

/** The portal session, as GET /portal/api/session answers it. */
export type PortalSession = Static<(typeof portalSessionContract)['answer']['payload']['json']>

export type Endpoint = Static<typeof EndpointSchema>
export type { Levels, PartnerDelivery }
export type ReceiverCheckReport = Static<typeof ReceiverCheckReportSchema>
export type DeliveryFilter = Static<typeof DeliveryListRequestSchema>

/** The self-service routes the portal serves: every one but minting a link (a link is how one enters it). */
type PortalContract = Exclude<(typeof selfServiceContracts)[number], typeof mintPortalLinkContract>
export type PortalAction = PortalContract['operationId']

/** Each action of /portal/api/ by its operationId: the plain JSON it takes, and what it answers (as the sealed routes do). */
export type PortalActions = {
  [C in PortalContract as C['operationId']]: [
    Omit<Static<C['body']['sealed']>, 'issuedAt'>,
    Static<C['answer']['payload']['result']>,
  ]
}

const portalContracts = selfServiceContracts.filter(
  (contract): contract is PortalContract => contract !== mintPortalLinkContract,
)

/** Where each action is served: its path after /portal/api/, the same as after /openapi/v1/. */
export const PORTAL_ACTIONS = Object.fromEntries(
  portalContracts.map((contract) => [contract.operationId, contract.path.replace(/^\/openapi\/v1\//, '')]),
) as Record<PortalAction, string>
