import { component, EVENT_TYPES, KEPT_ANSWER_BYTES } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { type Holds, Id, NullableTime, type Same, Time } from '../http/answer-fields.js'
import { DELIVERY_STATES } from './delivery-store.js'
import type { DeliveryView } from './delivery-views.js'

/* What the delivery routes answer; each schema is checked against its view's type when this compiles. */

export const AttemptSchema = Type.Object({
  attemptNo: Type.Integer({ minimum: 1, description: "1 for the delivery's first attempt recorded" }),
  startedAt: Time('when the attempt began'),
  durationMs: Type.Integer({ minimum: 0 }),
  outcome: Type.Enum(['acked', 'failed', 'aborted', 'gone'], {
    description:
      'acked: the partner answered 2xx with code 2000; failed: anything else; aborted: cut off by a shutdown; gone: answered 410, which disables the push URL',
  }),
  httpStatus: Type.Union([Type.Integer(), Type.Null()]),
  responseCode: Type.Union([Type.Integer(), Type.Null()], {
    description: "the `code` of the partner's answer",
  }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why the attempt failed, when it did' }),
  answer: Type.Union([Type.String(), Type.Null()], {
    description: `the first ${KEPT_ANSWER_BYTES} bytes of the receiver's answer; null when none came`,
  }),
  nextAttemptAt: NullableTime('when the next attempt was scheduled by this one'),
})

export const DeliverySchema = Type.Object(
  {
    deliveryId: Id('the delivery'),
    enterpriseId: Id('the enterprise pushed to'),
    endpointId: Type.Union([Id('the endpoint pushed to'), Type.Null()], {
      description:
        'the endpoint pushed to; null for a delivery made before endpoints existed, of an enterprise without a push URL',
    }),
    audioId: Type.String(),
    eventId: Type.String({ description: 'the same on every attempt and replay: the partner dedups by it' }),
    eventType: Type.Enum(EVENT_TYPES),
    state: Type.Enum(DELIVERY_STATES, {
      description: 'the delivery state (see the delivery states in the operator guide)',
    }),
    attempts: Type.Array(AttemptSchema),
    createdAt: Time('when the event was created'),
    nextAttemptAt: NullableTime('when the next attempt (pending) or re-push (acked) is due'),
    ackedAt: NullableTime('when the partner first acknowledged it'),
    confirmedAt: NullableTime('when a receipt callback confirmed it'),
  },
  component({ name: 'Delivery', description: 'A push delivery with every attempt.' }),
)

export const DeliveryListSchema = Type.Object({
  deliveries: Type.Array(DeliverySchema, { description: 'newest first' }),
})

export const ReplayedDeliverySchema = Type.Object({
  deliveryId: Id('the delivery'),
  replayed: Type.Literal(true),
  delivery: DeliverySchema,
})

export const CancelledDeliverySchema = Type.Object({
  deliveryId: Id('the delivery'),
  cancelled: Type.Literal(true),
  delivery: DeliverySchema,
})

export const ReplayedRangeSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  replayed: Type.Integer({ minimum: 0, description: 'deliveries put back to pending' }),
})

export const UnreceiptedReplayAnswerSchema = Type.Union([
  Type.Object(
    {
      enterpriseId: Id('the enterprise'),
      since: Type.String(),
      replayable: Type.Integer({ minimum: 0, description: 'what a replay would push again now' }),
      alreadyScheduled: Type.Integer({ minimum: 0, description: 'pending or in flight: pushed anyway' }),
    },
    { title: 'dry run' },
  ),
  Type.Object(
    {
      enterpriseId: Id('the enterprise'),
      since: Type.String(),
      replayed: Type.Integer({
        minimum: 0,
        description: 'acked, failed and unconfirmed deliveries pushed again',
      }),
      alreadyScheduled: Type.Integer({ minimum: 0, description: 'pending or in flight: left alone' }),
    },
    { title: 'replay' },
  ),
])

export const DeliveryLogSchema = Type.Object({
  deliveries: Type.Array(DeliverySchema, { description: 'newest first' }),
  nextBefore: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
    description: "the next page's `before`; null on the last page",
  }),
})

export const ReplayableSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  from: Type.String(),
  to: Type.String(),
  replayable: Type.Integer({
    minimum: 0,
    description: 'what a range replay with the same bounds would replay now',
  }),
})

/** Compiles only while each schema describes exactly the type its route answers with. */
export type SchemasDescribeTheirTypes = [Holds<Same<Static<typeof DeliverySchema>, DeliveryView>>]
