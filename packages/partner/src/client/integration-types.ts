/**
 * What the calls that manage a partner's own integration take and answer (integration-calls.ts): the
 * plaintexts and answers of the protocol's self-service operations, named.
 */
import type { PartnerDelivery, SealedPlaintextOf, SealedResultOf } from '@earshot/protocol'

export type { PortalAccess } from '@earshot/protocol'

/** One of your push endpoints: a URL and the event types pushed to it, with its URL's health. */
export type Endpoint = SealedResultOf<'addEndpoint'>
export type EndpointHealth = Endpoint['health']
export type EndpointList = SealedResultOf<'listEndpoints'>
/** A new endpoint: by default every event type, enabled, no rate limit. */
export type NewEndpoint = SealedPlaintextOf<'addEndpoint'>
/** What to change of an endpoint; what is not given stays as it is. */
export type EndpointChanges = Omit<SealedPlaintextOf<'updateEndpoint'>, 'endpointId'>
export type RemovedEndpoint = SealedResultOf<'removeEndpoint'>

/** The receiver check of a URL; `callbackWithinSeconds` bounds the wait for each receipt callback. */
export type ReceiverCheckOptions = Omit<SealedPlaintextOf<'checkEndpoint'>, 'url'>
/** The receiver check's verdict on a URL, item by item. */
export type ReceiverCheckReport = SealedResultOf<'checkEndpoint'>

/** Which deliveries to list (every filter optional), and from which cursor. */
export type DeliveriesRequest = SealedPlaintextOf<'listDeliveries'>
/** A page of deliveries, newest first; nextCursor is null at the end. */
export type DeliveryPage = SealedResultOf<'listDeliveries'>
/** A push of one event to one endpoint, with its attempts. */
export type Delivery = PartnerDelivery
/** One attempt: `answer` holds the first 4 KiB of what the receiver answered (null, like httpStatus, when none came). */
export type DeliveryAttempt = Delivery['attempts'][number]

type ReplayRequest = SealedPlaintextOf<'replayDeliveries'>
export type ReplayableState = NonNullable<ReplayRequest['states']>[number]
/** Every delivery created at or after `since` in one of `states` (default failed and unconfirmed). */
export interface ReplaySinceRequest {
  since: NonNullable<ReplayRequest['since']>
  states?: ReplayRequest['states']
}
export type Replayed = SealedResultOf<'replayDeliveries'>

export type LevelsWindow = SealedPlaintextOf<'readLevels'>['window']
/** Your delivery service levels over a window; a figure is null when the window has no data for it. */
export type ServiceLevels = SealedResultOf<'readLevels'>

/** A new key: its secret is answered this once. */
export type RotatedKey = SealedResultOf<'rotateKey'>

export type PortalLinkRequest = SealedPlaintextOf<'mintPortalLink'>
/** A one-time link into the portal. */
export type PortalLink = SealedResultOf<'mintPortalLink'>
