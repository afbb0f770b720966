import Type, { type Static, type TSchema } from 'typebox'
import type { COUNTED_STATES } from '../deliveries/delivery-store.js'
import type { Holds, Same } from '../http/answer-fields.js'
import { PushUrlSchema } from '../push-urls/push-url-answers.js'
import type { Overview } from './overview.js'

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
  endpoints: Type.Array(PushUrlSchema),
})

/** Compiles only while the schema describes exactly the figures the overview answers with. */
export type SchemaDescribesItsType = Holds<Same<Static<typeof OverviewSchema>, Overview>>
