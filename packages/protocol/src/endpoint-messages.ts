import Type from 'typebox'
import { component } from './component.js'
import { EVENT_TYPES } from './event-type-names.js'
import { RULE, UNKNOWN_FIELD_RULE } from './message-parser.js'

/*
 * A push endpoint and the receiver check as both APIs speak of them: operators through the admin API, a
 * partner through its own sealed routes and the portal. One schema each, so the two cannot drift.
 */

/** Endpoints an enterprise may have at once. */
export const MAX_ENDPOINTS = 10
const MAX_URL_LENGTH = 2048
const MAX_DESCRIPTION_LENGTH = 500
/** An endpoint's rate at most, deliveries a second. */
const MAX_PER_SECOND = 10_000

/** The bounds of an endpoint's fields, as its schemas check them (the console's form shows them too). */
export const ENDPOINT_LIMITS = {
  urlLength: MAX_URL_LENGTH,
  descriptionLength: MAX_DESCRIPTION_LENGTH,
  perSecond: MAX_PER_SECOND,
} as const

export const PUSH_URL_STATES = ['healthy', 'failing', 'disabled'] as const
export type PushUrlState = (typeof PUSH_URL_STATES)[number]

const Time = (description: string) =>
  Type.String({ description: `${description}; ISO-8601 UTC with milliseconds (…Z)` })
const NullableTime = (description: string) => Type.Union([Time(description), Type.Null()])

export const EndpointUrl = Type.String({
  maxLength: MAX_URL_LENGTH,
  description:
    'where the platform pushes: an absolute http(s) URL without credentials that resolves to public addresses (loopback and private ones too with EARSHOT_PUSH_ALLOW_PRIVATE=1)',
  [RULE]: `must be an absolute http:// or https:// URL of at most ${MAX_URL_LENGTH} characters`,
})
export const EndpointEventTypes = Type.Array(Type.Enum(EVENT_TYPES), {
  minItems: 1,
  uniqueItems: true,
  description: 'the event types pushed to it (default: every event type)',
  [RULE]: `must be a non-empty list of distinct event types among ${EVENT_TYPES.join(', ')}`,
})
export const EndpointDescription = Type.String({
  maxLength: MAX_DESCRIPTION_LENGTH,
  pattern: '^[^\\u0000]*$',
  description: "what the endpoint is for (default '')",
  [RULE]: `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters, without U+0000`,
})
export const EndpointEnabled = Type.Boolean({
  description:
    'false holds its open deliveries, and those of new events, until it is true again (default true)',
  [RULE]: 'must be true or false',
})
export const EndpointMaxPerSecond = Type.Union(
  [Type.Integer({ minimum: 1, maximum: MAX_PER_SECOND }), Type.Null()],
  {
    description: 'deliveries a second at most to it, across every instance; null for no limit (the default)',
    [RULE]: `must be an integer from 1 to ${MAX_PER_SECOND}, or null for no limit`,
  },
)

export const EndpointSchema = Type.Object(
  {
    endpointId: Type.Integer({ minimum: 1, description: 'the endpoint' }),
    enterpriseId: Type.Integer({ minimum: 1, description: 'the enterprise it belongs to' }),
    url: Type.String({ description: 'as stored (normalized)' }),
    eventTypes: Type.Array(Type.Enum(EVENT_TYPES), { description: 'the event types pushed to it' }),
    description: Type.String(),
    enabled: Type.Boolean({
      description: 'false: held (its deliveries, and those of new events, wait)',
    }),
    maxPerSecond: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description: 'deliveries a second at most; null: no limit',
    }),
    createdAt: Time('when it was added'),
    health: Type.Object(
      {
        state: Type.Enum(PUSH_URL_STATES),
        reason: Type.Union([Type.String(), Type.Null()], {
          description: 'why it is disabled, or what is failing; null when healthy',
        }),
        lastSuccessAt: NullableTime('the last acknowledged push to its URL'),
        lastFailureAt: NullableTime('the last failed attempt to its URL'),
      },
      { description: "its push URL's health, shared by every endpoint with that URL" },
    ),
    waiting: Type.Integer({
      minimum: 0,
      description: 'its deliveries pending, held, or queued behind an earlier event of their recording',
    }),
  },
  component({
    name: 'Endpoint',
    description: "A push endpoint of an enterprise: its URL, event types, rate and its URL's health.",
  }),
)

/** How long the receiver check waits for a receipt callback after a push's answer, at most and by default. */
export const MAX_CALLBACK_SECONDS = 60

export const ReceiverCheckRequestSchema = Type.Object(
  {
    url: EndpointUrl,
    callbackWithinSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_CALLBACK_SECONDS,
        description: `how long to wait for each receipt callback after its push's answer (default ${MAX_CALLBACK_SECONDS})`,
        [RULE]: `must be an integer from 1 to ${MAX_CALLBACK_SECONDS}`,
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of a check: give url, callbackWithinSeconds',
  },
)

/** The receiver check's items, in the order it runs them. */
export const CHECK_ITEM_IDS = [
  'valid-push',
  'same-event-again',
  'tampered-tag',
  'other-key',
  'not-an-envelope',
  'replayed-envelope',
  'unknown-fields',
  'deletion',
  'callbacks',
] as const
export type CheckItemId = (typeof CHECK_ITEM_IDS)[number]

export const ReceiverCheckReportSchema = Type.Object(
  {
    url: Type.String({ description: 'the URL checked, normalized' }),
    enterpriseId: Type.Integer(),
    keyVersion: Type.Integer({ description: "the enterprise's current key, which sealed the pushes" }),
    passed: Type.Boolean({ description: 'every failure item passed (warnings aside)' }),
    items: Type.Array(
      Type.Object({
        id: Type.Enum(CHECK_ITEM_IDS),
        severity: Type.Enum(['failure', 'warning'], {
          description: 'a failure item decides `passed`; a warning item is reported only',
        }),
        passed: Type.Boolean(),
        expected: Type.String({ description: 'what a receiver that follows the protocol does' }),
        evidence: Type.String({ description: 'what came back: HTTP status, code and time, or the error' }),
      }),
    ),
  },
  component({
    name: 'ReceiverCheckReport',
    description: "The receiver check's verdict on each item of its scripted series of pushes.",
  }),
)
