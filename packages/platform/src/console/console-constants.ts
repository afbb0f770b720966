import { ResponseCode } from '@earshot/protocol'
import { roles } from '../access/roles.js'
import { deliveryMachine, REPLAYABLE_STATES } from '../deliveries/delivery-states.js'
import { COUNTED_STATES } from '../deliveries/delivery-store.js'

/*
 * The API's names and codes the console's pages use, each read from where it is defined. The browser
 * cannot load this module's imports: console-assets.ts serves its values as plain data, under this name.
 */

/** The event types an endpoint may be subscribed to, as the API names and orders them. */
/** The bounds of an endpoint's URL, description and rate. */
export { ENDPOINT_LIMITS, EVENT_TYPES } from '@earshot/protocol'

const { ready, claimed, held, waiting, parked, final } = deliveryMachine

/**
 * Every state of a delivery, as the deliveries filter offers them: those before an attempt (due, behind an
 * earlier event, held), the attempt, the wait for a receipt, then the final ones.
 */
export const DELIVERY_STATES_BY_STAGE = [
  ready,
  ...parked,
  ...(held ? [held] : []),
  claimed,
  ...waiting,
  ...final,
]

/**
 * The states a delivery leaves on its own: acked ones wait for the partner's receipt (the console shows them
 * confirmed as it comes), queued ones for the earlier events of their recording.
 */
export const MOVING_STATES = [ready, ...parked, claimed, ...waiting]

/** The states the overview counts deliveries in, in its order, and those one delivery may be replayed from. */
export { COUNTED_STATES, REPLAYABLE_STATES }

/** The refusal code of an invalid field: its message starts with the field's name. */
export const INVALID_PARAMETER = ResponseCode.INVALID_PARAMETER

/** The roles an operator or an API key may have, and the permissions each grants. */
export { ROLE_NAMES } from '../access/roles.js'
export const ROLES = roles
