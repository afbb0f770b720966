import Type, { type Static } from 'typebox'
import { component } from './component.js'
import {
  CHECK_ITEM_IDS,
  EndpointDescription,
  EndpointEnabled,
  EndpointMaxPerSecond,
  EndpointSchema,
  EndpointUrl,
  ReceiverCheckRequestSchema,
} from './endpoint-messages.js'
import { EVENT_TYPES, shortEventType } from './event-type-names.js'
import { RULE } from './message-parser.js'
import { DEFAULT_PAGE_SIZE, IssuedAtField, MAX_PAGE_SIZE } from './messages.js'
import { ISO_INSTANT_PATTERN, ISO_INSTANT_RULE } from './time.js'

/*
 * What a partner sends and reads when it manages its own integration: the plaintexts and sealed answers of
 * the self-service routes (endpoints, deliveries, replay, receiver check, service levels, key, portal link).
 */

const closed = { additionalProperties: false } as const
const plaintext = (name: string, description: string) => component({ name, description, sealed: true })
const answer = (name: string, description: string) => component({ name, description, sealed: true })
const Instant = (description: string) =>
  Type.String({ pattern: ISO_INSTANT_PATTERN, description, [RULE]: ISO_INSTANT_RULE })
const Count = (description: string) => Type.Integer({ minimum: 0, description })
const EndpointId = Type.Integer({
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'the endpoint, as endpoints/list answers it',
  [RULE]: 'must be a positive integer: an endpointId from endpoints/list',
})

/** An event type by its full name or its short one (`transcript_ready` for `recording.transcript_ready`). */
export const SHORT_EVENT_TYPES = EVENT_TYPES.map(shortEventType)
const AnyEventTypeName = Type.Enum([...EVENT_TYPES, ...SHORT_EVENT_TYPES])
const EventTypeNames = Type.Array(AnyEventTypeName, {
  minItems: 1,
  uniqueItems: true,
  description: 'the event types pushed to it, full or short names (default: every event type)',
  [RULE]: `must be a non-empty list of distinct event types among ${EVENT_TYPES.join(', ')} (or their short names ${SHORT_EVENT_TYPES.join(', ')})`,
})

export const EndpointListRequestSchema = Type.Object(
  { ...IssuedAtField },
  { ...closed, ...plaintext('EndpointListRequest', "Lists the enterprise's endpoints.") },
)

export const EndpointListSchema = Type.Object(
  { items: Type.Array(EndpointSchema, { description: 'in the order they were added' }) },
  answer('EndpointList', "The enterprise's push endpoints, each with its URL's health."),
)

const endpointSettings = {
  eventTypes: Type.Optional(EventTypeNames),
  description: Type.Optional(EndpointDescription),
  maxPerSecond: Type.Optional(EndpointMaxPerSecond),
}

export const EndpointAddRequestSchema = Type.Object(
  { url: EndpointUrl, ...endpointSettings, ...IssuedAtField },
  { ...closed, ...plaintext('EndpointAddRequest', 'A new push endpoint (enabled).') },
)

export const EndpointUpdateRequestSchema = Type.Object(
  {
    endpointId: EndpointId,
    url: Type.Optional(EndpointUrl),
    ...endpointSettings,
    enabled: Type.Optional(EndpointEnabled),
    ...IssuedAtField,
  },
  {
    ...closed,
    ...plaintext(
      'EndpointUpdateRequest',
      'The fields of an endpoint to change; those absent stay as they are.',
    ),
  },
)

export const EndpointRemoveRequestSchema = Type.Object(
  { endpointId: EndpointId, ...IssuedAtField },
  {
    ...closed,
    ...plaintext('EndpointRemoveRequest', 'Removes an endpoint; its open deliveries are cancelled.'),
  },
)

export const EndpointRemovedSchema = Type.Object(
  {
    endpointId: Type.Integer({ minimum: 1 }),
    cancelled: Count('its deliveries not yet confirmed, now cancelled'),
  },
  answer('EndpointRemoved', 'The endpoint removed, and how many of its deliveries were cancelled.'),
)

export const EndpointCheckRequestSchema = Type.Object(
  { ...ReceiverCheckRequestSchema.properties, ...IssuedAtField },
  {
    ...closed,
    ...plaintext(
      'EndpointCheckRequest',
      `Runs the receiver check (${CHECK_ITEM_IDS.length} items) on a URL.`,
    ),
  },
)

/** A delivery's states, as the partner reads them. */
export const DELIVERY_STATES = [
  'pending',
  'in_flight',
  'acked',
  'confirmed',
  'failed',
  'unconfirmed',
  'cancelled',
  'held',
  'queued',
] as const
export type DeliveryStateName = (typeof DELIVERY_STATES)[number]

/** The longest answer an attempt keeps, in bytes of UTF-8. */
export const KEPT_ANSWER_BYTES = 4096

export const DeliveryListRequestSchema = Type.Object(
  {
    state: Type.Optional(
      Type.Enum(DELIVERY_STATES, { [RULE]: `must be one of ${DELIVERY_STATES.join(', ')}` }),
    ),
    eventType: Type.Optional(AnyEventTypeName),
    audioId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    since: Type.Optional(Instant("inclusive lower bound on the delivery's creation")),
    until: Type.Optional(Instant("exclusive upper bound on the delivery's creation")),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'opaque: a nextCursor as answered' }),
    ),
    size: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PAGE_SIZE,
        description: `deliveries per page, default ${DEFAULT_PAGE_SIZE}`,
        [RULE]: `must be an integer from 1 to ${MAX_PAGE_SIZE}`,
      }),
    ),
    ...IssuedAtField,
  },
  {
    ...closed,
    ...plaintext('DeliveryListRequest', "A page of the enterprise's deliveries, newest first, filtered."),
  },
)

export const DeliveryAttemptSchema = Type.Object({
  startedAt: Type.String({ description: 'ISO-8601 UTC with milliseconds' }),
  durationMs: Count('how long it took'),
  httpStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'null when no answer came' }),
  answer: Type.Union([Type.String(), Type.Null()], {
    description: `the first ${KEPT_ANSWER_BYTES} bytes of the receiver's answer; null when none came`,
  }),
})

export const PartnerDeliverySchema = Type.Object(
  {
    deliveryId: Type.Integer({ minimum: 1 }),
    endpointId: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
    eventId: Type.String(),
    eventType: Type.Enum(EVENT_TYPES),
    audioId: Type.String(),
    state: Type.Enum(DELIVERY_STATES),
    createdAt: Type.String({ description: 'ISO-8601 UTC with milliseconds' }),
    attempts: Type.Array(DeliveryAttemptSchema, { description: 'oldest first' }),
  },
  answer('PartnerDelivery', 'One push of one event to one endpoint, with its attempts.'),
)
export type PartnerDelivery = Static<typeof PartnerDeliverySchema>

export const DeliveryPageSchema = Type.Object(
  {
    items: Type.Array(PartnerDeliverySchema, { description: 'newest first' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'for the next page; null at the end',
    }),
    hasMore: Type.Boolean(),
  },
  answer('DeliveryPage', 'A page of deliveries.'),
)

/** The states a replay since a time may take. */
export const REPLAY_STATES = ['failed', 'unconfirmed'] as const

export const DeliveryReplayRequestSchema = Type.Object(
  {
    deliveryId: Type.Optional(
      Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, [RULE]: 'must be a positive integer' }),
    ),
    states: Type.Optional(
      Type.Array(Type.Enum(REPLAY_STATES), {
        minItems: 1,
        uniqueItems: true,
        [RULE]: `must be a non-empty list among ${REPLAY_STATES.join(', ')}`,
      }),
    ),
    since: Type.Optional(Instant('replays those created at or after it')),
    ...IssuedAtField,
  },
  {
    ...closed,
    ...plaintext(
      'DeliveryReplayRequest',
      'Pushes again one delivery ({deliveryId}), or every one in the given states created since a time ({states, since}).',
    ),
  },
)

export const ReplayedSchema = Type.Object(
  { replayed: Count('deliveries pending again, same eventId') },
  answer('Replayed', 'How many deliveries the replay made pending again.'),
)

export const LEVEL_WINDOWS = ['24h', '7d'] as const

export const LevelsRequestSchema = Type.Object(
  {
    window: Type.Enum(LEVEL_WINDOWS, { [RULE]: `must be one of ${LEVEL_WINDOWS.join(', ')}` }),
    ...IssuedAtField,
  },
  { ...closed, ...plaintext('LevelsRequest', 'The service levels of the last 24 hours or 7 days.') },
)

const Millis = (description: string) =>
  Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: `${description}; null without data` })

export const LevelsSchema = Type.Object(
  {
    firstAttemptP50Ms: Millis("median time from a delivery's creation to its first attempt"),
    firstAttemptP95Ms: Millis("95th percentile of the time from a delivery's creation to its first attempt"),
    firstAttemptAckShare: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
      description: 'the share of first attempts acknowledged, 0..1; null without data',
    }),
    ackToReceiptP95Ms: Millis('95th percentile of the time from an acknowledgement to its receipt callback'),
    backlog: Count('deliveries pending, held, queued or in flight now'),
  },
  answer(
    'Levels',
    "The enterprise's delivery service levels over the window, of deliveries created in it; they may lag by up to 10 s.",
  ),
)
export type Levels = Static<typeof LevelsSchema>

export const KeyRotateRequestSchema = Type.Object(
  { ...IssuedAtField },
  { ...closed, ...plaintext('KeyRotateRequest', "Rotates the enterprise's key.") },
)

export const RotatedKeySchema = Type.Object(
  {
    keyVersion: Type.Integer({ minimum: 1 }),
    secret: Type.String({ description: 'the new 32-byte secret, Base64: shown once' }),
  },
  answer('RotatedKey', 'The new key; the previous one stays valid for the grace period.'),
)

export const PORTAL_ACCESS = ['view', 'manage'] as const
export type PortalAccess = (typeof PORTAL_ACCESS)[number]

export const PortalLinkRequestSchema = Type.Object(
  {
    access: Type.Optional(
      Type.Enum(PORTAL_ACCESS, {
        description: 'default view',
        [RULE]: `must be one of ${PORTAL_ACCESS.join(', ')}`,
      }),
    ),
    ...IssuedAtField,
  },
  { ...closed, ...plaintext('PortalLinkRequest', 'Mints a one-time link into the partner portal.') },
)

export const PortalLinkSchema = Type.Object(
  {
    url: Type.String({ description: 'open it once, before expiresAt' }),
    expiresAt: Type.String({ description: 'ISO-8601 UTC with milliseconds' }),
  },
  answer('PortalLink', 'A one-time link into the partner portal.'),
)
