import { EndpointSchema } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { DeliverySchema } from '../deliveries/delivery-answers.js'
import { type Holds, Id, type Same } from '../http/answer-fields.js'
import type { EndpointView } from './endpoint-store.js'

/* What the endpoint routes answer; the endpoint's schema is checked against its view's type when this compiles. */

export { EndpointSchema }

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
