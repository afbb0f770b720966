import { PushEventType } from '@earshot/protocol'
import Type, { type Static, type TSchema } from 'typebox'
import type { Overview } from '../console/overview.js'
import type { EnterpriseCredentials, EnterpriseSummary, RotatedKey } from '../enterprises/enterprise-store.js'
import type { ImportProgressLine } from '../imports/json-lines-import.js'
import { type COUNTED_STATES, DELIVERY_STATES } from '../push/delivery-store.js'
import type { DeliveryView } from '../push/delivery-views.js'
import { ENDPOINT_STATES, type EndpointView } from '../push/endpoint-health.js'

/*
 * What the admin API answers, as JSON Schema for its OpenAPI document. The routes build these answers
 * from the stores' types; each schema below is checked against its type when this compiles (Same), and
 * docs/openapi.test.ts checks real answers against them.
 */

const Time = (description: string) =>
  Type.String({ description: `${description}; ISO-8601 UTC with milliseconds (…Z)` })
const NullableTime = (description: string) => Type.Union([Time(description), Type.Null()])
const Id = (description: string) => Type.Integer({ minimum: 1, description })

export const HealthSchema = Type.Object({ status: Type.Literal('ok') })

export const DisabledEnterpriseSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  disabled: Type.Literal(true),
})

export const PushUrlSetSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  pushUrl: Type.Union([Type.String(), Type.Null()], { description: 'as stored (normalized), or null' }),
})

export const StoredRecordingSchema = Type.Object({
  audioId: Type.String({ description: 'given or assigned' }),
})
export const UpdatedRecordingSchema = Type.Object({ updated: Type.String({ description: 'the audioId' }) })
export const DeletedRecordingSchema = Type.Object({ deleted: Type.String({ description: 'the audioId' }) })

export const EnterpriseCredentialsSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  keyVersion: Type.Integer({ minimum: 1, description: 'the version of this key' }),
  secret: Type.String({
    description: 'standard Base64 of 32 random bytes (44 characters): shown once, keep it safe',
  }),
})

export const RotatedKeySchema = Type.Object({
  ...EnterpriseCredentialsSchema.properties,
  previousKeyVersion: Type.Integer({ minimum: 1 }),
  previousKeyRetiresAt: Time('when the previous key stops being accepted (EARSHOT_KEY_GRACE from now)'),
})

export const EnterpriseSummarySchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  name: Type.String(),
  pushUrl: Type.Union([Type.String(), Type.Null()]),
  disabled: Type.Boolean(),
  createdAt: Time('when it was created'),
  keys: Type.Array(
    Type.Object({
      keyVersion: Type.Integer({ minimum: 1 }),
      createdAt: Time('when the key was issued'),
      retiresAt: NullableTime('when the key stops being accepted; null for the current key'),
    }),
  ),
})

export const EnterpriseListSchema = Type.Object({ enterprises: Type.Array(EnterpriseSummarySchema) })

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
  nextAttemptAt: NullableTime('when the next attempt was scheduled by this one'),
})

export const DeliverySchema = Type.Object({
  deliveryId: Id('the delivery'),
  enterpriseId: Id('the enterprise pushed to'),
  audioId: Type.String(),
  eventId: Type.String({ description: 'the same on every attempt and replay: the partner dedups by it' }),
  eventType: Type.Enum(Object.values(PushEventType)),
  state: Type.Enum(DELIVERY_STATES, {
    description: 'the delivery state (see the delivery states in the README)',
  }),
  attempts: Type.Array(AttemptSchema),
  createdAt: Time('when the event was created'),
  nextAttemptAt: NullableTime('when the next attempt (pending) or re-push (acked) is due'),
  ackedAt: NullableTime('when the partner first acknowledged it'),
  confirmedAt: NullableTime('when a receipt callback confirmed it'),
})

export const DeliveryListSchema = Type.Object({
  deliveries: Type.Array(DeliverySchema, { description: 'newest first' }),
})

export const ReplayedDeliverySchema = Type.Object({
  deliveryId: Id('the delivery'),
  replayed: Type.Literal(true),
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

export const EndpointSchema = Type.Object({
  url: Type.String(),
  state: Type.Enum(ENDPOINT_STATES),
  reason: Type.Union([Type.String(), Type.Null()], {
    description: 'why it is disabled, or what is failing; null when healthy',
  }),
  failingSince: NullableTime('the first failure since the last success'),
  lastSuccessAt: NullableTime('the last acknowledged push'),
  lastFailureAt: NullableTime('the last failed attempt'),
  consecutiveFailures: Type.Integer({ minimum: 0 }),
  disabledAt: NullableTime('when it was disabled'),
  enterprises: Type.Array(Type.Integer({ minimum: 1 }), { description: 'the enterprises pushing to it now' }),
})

export const EndpointListSchema = Type.Object({
  endpoints: Type.Array(EndpointSchema, { description: 'by URL' }),
})

export const EnabledEndpointSchema = Type.Object({
  url: Type.String(),
  enabled: Type.Literal(true),
  resumed: Type.Integer({ minimum: 0, description: 'deliveries it held, pending again in due order' }),
  replayed: Type.Integer({
    minimum: 0,
    description:
      'deliveries to it that went failed since it began failing, pending again with a fresh schedule',
  }),
  endpoint: EndpointSchema,
})

/** The console's figures (console/overview.ts). */
export const OverviewSchema = Type.Object({
  windowSeconds: Type.Integer({ minimum: 1, description: 'the span the push figures cover' }),
  deliveries: Type.Object({
    byState: Type.Object(
      {
        pending: Type.Integer({ minimum: 0 }),
        in_flight: Type.Integer({ minimum: 0 }),
        acked: Type.Integer({ minimum: 0 }),
        failed: Type.Integer({ minimum: 0 }),
        unconfirmed: Type.Integer({ minimum: 0 }),
      } satisfies Record<(typeof COUNTED_STATES)[number], TSchema>,
      { description: 'every delivery in a state still moving or waiting for an operator' },
    ),
    confirmedInWindow: Type.Integer({ minimum: 0, description: 'deliveries confirmed within the window' }),
  }),
  queueDepth: Type.Integer({
    minimum: 0,
    description: 'deliveries due for an attempt now and not yet claimed',
  }),
  push: Type.Object({
    attempts: Type.Integer({ minimum: 0, description: 'attempts in the window, aborted ones aside' }),
    acked: Type.Integer({ minimum: 0 }),
    successRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
      description: 'acked / attempts; null without attempts',
    }),
    latencyMs: Type.Object({
      p50: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
      p99: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
    }),
  }),
  endpoints: Type.Array(EndpointSchema),
})

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

/** One line of an import's application/x-ndjson answer. */
export const ImportLineSchema = Type.Union([
  Type.Object(
    {
      progress: Type.Integer({ minimum: 0, description: 'recordings committed so far' }),
      total: Type.Integer({ minimum: 1, description: 'valid recordings in the file' }),
    },
    { title: 'progress' },
  ),
  Type.Object(
    {
      imported: Type.Integer({ minimum: 0, description: 'new recordings, and transcripts attached' }),
      skipped: Type.Integer({ minimum: 0, description: 'lines already stored with the same content' }),
    },
    { title: 'summary (the last line of a complete import)' },
  ),
  Type.Object(
    {
      error: Type.Object({
        code: Type.Integer(),
        msg: Type.String({ description: 'what failed, and how many lines were committed before it' }),
      }),
    },
    { title: 'error (the last line of an import that stopped part-way)' },
  ),
])

/** True when A and B are the same type. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Describes<S extends TSchema, T> = Same<Static<S>, T>
type Holds<T extends true> = T

/** Compiles only while each schema describes exactly the type its routes answer with. */
export type SchemasDescribeTheirTypes = [
  Holds<Describes<typeof EnterpriseCredentialsSchema, EnterpriseCredentials>>,
  Holds<Describes<typeof RotatedKeySchema, RotatedKey>>,
  Holds<Describes<typeof EnterpriseSummarySchema, EnterpriseSummary>>,
  Holds<Describes<typeof DeliverySchema, DeliveryView>>,
  Holds<Describes<typeof EndpointSchema, EndpointView>>,
  Holds<Describes<typeof ImportLineSchema, ImportProgressLine>>,
  Holds<Describes<typeof OverviewSchema, Overview>>,
]
