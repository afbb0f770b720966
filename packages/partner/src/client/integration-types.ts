/** What the calls that manage a partner's own integration take and answer (integration-calls.ts). */
import type { PushEventTypeValue } from '@earshot/protocol'

/** An event type by its full name (`recording.transcript_ready`); the short one (`transcript_ready`) is taken too. */
export type EventTypeName = PushEventTypeValue | string

/** The health of an endpoint's push URL (shared by every endpoint with that URL). */
export interface EndpointHealth {
  state: string
  /** Why it is disabled, or what is failing; null when healthy. */
  reason: string | null
  lastSuccessAt: string | null
  lastFailureAt: string | null
}

/** One of your push endpoints: a URL and the event types pushed to it, as the platform keeps it. */
export interface Endpoint {
  endpointId: number
  enterpriseId: number
  url: string
  eventTypes: PushEventTypeValue[]
  description: string
  /** False: disabled, its deliveries (and those of new events) wait. */
  enabled: boolean
  /** Deliveries a second at most; null: no limit. */
  maxPerSecond: number | null
  createdAt: string
  health: EndpointHealth
  /** Its deliveries pending, held, or queued behind an earlier event of their recording. */
  waiting: number
}

export interface EndpointList {
  items: Endpoint[]
}

/** A new endpoint: by default every event type, enabled, no rate limit. */
export interface NewEndpoint {
  url: string
  eventTypes?: EventTypeName[] | undefined
  description?: string | undefined
  maxPerSecond?: number | undefined
}

/** What to change of an endpoint; what is not given stays as it is. */
export interface EndpointChanges {
  url?: string | undefined
  eventTypes?: EventTypeName[] | undefined
  description?: string | undefined
  maxPerSecond?: number | undefined
  enabled?: boolean | undefined
}

export interface RemovedEndpoint {
  endpointId: number
  /** Its deliveries not yet confirmed, now cancelled. */
  cancelled: number
}

/** The receiver check's verdict on a URL, item by item. */
export interface ReceiverCheckReport {
  url: string
  enterpriseId: number
  keyVersion: number
  /** Every failure item passed (warnings aside). */
  passed: boolean
  items: {
    id: string
    severity: 'failure' | 'warning'
    passed: boolean
    expected: string
    evidence: string
  }[]
}

/** One attempt to push a delivery. */
export interface DeliveryAttempt {
  startedAt: string
  durationMs: number | null
  /** Null when no answer came (no connection, a timeout). */
  httpStatus: number | null
  /** The first 4 KiB of the receiver's answer; null when none came. */
  answer: string | null
}

/** A push of one event to one endpoint, with its attempts. */
export interface Delivery {
  deliveryId: number
  endpointId: number
  eventId: string
  eventType: PushEventTypeValue
  audioId: string
  state: string
  createdAt: string
  attempts: DeliveryAttempt[]
}

/** Which deliveries to list: every filter is optional. */
export interface DeliveriesRequest {
  state?: string | undefined
  eventType?: EventTypeName | undefined
  audioId?: string | undefined
  /** Created at or after this ISO-8601 instant. */
  since?: string | undefined
  /** Created before this ISO-8601 instant. */
  until?: string | undefined
  /** A nextCursor as answered. */
  cursor?: string | undefined
  /** Deliveries per page, 1 to 100; default 20. */
  size?: number | undefined
}

/** A page of deliveries, newest first. */
export interface DeliveryPage {
  items: Delivery[]
  /** Pass it as `cursor` for the next page; null when there is none. */
  nextCursor: string | null
  hasMore: boolean
}

export type ReplayableState = 'failed' | 'unconfirmed'

export interface ReplaySinceRequest {
  /** Created at or after this ISO-8601 instant. */
  since: string
  /** Default both: failed and unconfirmed. */
  states?: ReplayableState[] | undefined
}

export interface Replayed {
  replayed: number
}

export type LevelsWindow = '24h' | '7d'

/** Your delivery service levels over a window; a figure is null when the window has no data for it. */
export interface ServiceLevels {
  firstAttemptP50Ms: number | null
  firstAttemptP95Ms: number | null
  /** The share of deliveries acknowledged at their first attempt, 0 to 1. */
  firstAttemptAckShare: number | null
  ackToReceiptP95Ms: number | null
  /** Deliveries pending, held, queued or in flight now. */
  backlog: number
}

/** A new key: the secret is shown this once. */
export interface RotatedKey {
  keyVersion: number
  secret: string
}

export type PortalAccess = 'view' | 'manage'

/** A one-time link into the portal. */
export interface PortalLink {
  url: string
  expiresAt: string
}
