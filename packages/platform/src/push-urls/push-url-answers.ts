import { component, PUSH_URL_STATES } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { type Holds, NullableTime, type Same } from '../http/answer-fields.js'
import type { PushUrlView } from './push-url-health.js'

/* What the push URL routes answer; the schema is checked against its view's type when this compiles. */

export const PushUrlSchema = Type.Object(
  {
    url: Type.String(),
    state: Type.Enum(PUSH_URL_STATES),
    reason: Type.Union([Type.String(), Type.Null()], {
      description: 'why it is disabled, or what is failing; null when healthy',
    }),
    failingSince: NullableTime('the first failure since the last success'),
    lastSuccessAt: NullableTime('the last acknowledged push'),
    lastFailureAt: NullableTime('the last failed attempt'),
    consecutiveFailures: Type.Integer({ minimum: 0 }),
    disabledAt: NullableTime('when it was disabled'),
    enterprises: Type.Array(Type.Integer({ minimum: 1 }), {
      description: 'the enterprises pushing to it now',
    }),
  },
  component({ name: 'PushUrl', description: "A push URL's health." }),
)

export const PushUrlListSchema = Type.Object({
  pushUrls: Type.Array(PushUrlSchema, { description: 'by URL' }),
})

export const EnabledPushUrlSchema = Type.Object({
  url: Type.String(),
  enabled: Type.Literal(true),
  resumed: Type.Integer({ minimum: 0, description: 'deliveries it held, pending again in due order' }),
  replayed: Type.Integer({
    minimum: 0,
    description:
      'deliveries to it that went failed since it began failing, pending again with a fresh schedule',
  }),
  endpoint: PushUrlSchema,
})

/** Compiles only while the schema describes exactly the type its route answers with. */
export type SchemaDescribesItsType = Holds<Same<Static<typeof PushUrlSchema>, PushUrlView>>
