import { component, EVENT_TYPES } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { DeliverySchema } from '../deliveries/delivery-answers.js'
import { type Holds, Id, NullableTime, type Same, Time } from '../http/answer-fields.js'
import { PUSH_URL_STATES } from '../push-urls/push-url-health.js'
import type { EndpointView } from './endpoint-store.js'

/* What the endpoint routes answer; the schema is checked against its view's type when this compiles. */

export const EndpointSchema = Type.Object(
  {
    endpointId: Id('the endpoint'),
    enterpriseId: Id('the enterprise it belongs to'),
    url: Type.String({ description: 'as stored (normalized)' }),
    eventTypes: Type.Array(Type.Enum(EVENT_TYPES), { description: 'the event types pushed to it' }),
    description: Type.String(),
    enabled: Type.Boolean({
      description: 'false: held by an operator (its deliveries, and those of new events, wait)',
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

export const UpdatedEndpointSchema = Type.Object({
  ...EndpointSchema.properties,
  discarded: Type.Integer({
    minimum: 0,
    description:
      'the deliveries it held (and those queued behind them) cancelled by discardHeld; 0 without it',
  }),
})

export const EndpointListSchema = Type.Object({
  endpoints: Type.Array(EndpointSchema, { description: 'by enterprise, then in the order they were added' }),
})

export const EndpointDetailSchema = Type.Object({
  endpoint: EndpointSchema,
  recentDeliveries: Type.Array(DeliverySchema, {
    description: 'its last 20 deliveries with their attempts, newest first',
  }),
})

export const RemovedEndpointSchema = Type.Object({
  removed: Id('the endpoint'),
  cancelled: Type.Integer({ minimum: 0, description: 'its deliveries not yet confirmed, now cancelled' }),
})

/** Compiles only while the schema describes exactly the type its routes answer with. */
export type EndpointSchemaDescribesItsType = Holds<Same<Static<typeof EndpointSchema>, EndpointView>>

export const PushUrlSetSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  pushUrl: Type.Union([Type.String(), Type.Null()], { description: 'as stored (normalized), or null' }),
  cancelled: Type.Integer({
    minimum: 0,
    description:
      "deliveries of the enterprise's other endpoints (all of them, when cleared) not yet confirmed, now cancelled",
  }),
})
