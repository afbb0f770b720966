import {
  EVENT_TYPES,
  InvalidParameterError,
  messageParser,
  RULE,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import Type from 'typebox'
import { checkPushUrl } from '../http/address-policy.js'

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

export const Url = Type.String({
  maxLength: MAX_URL_LENGTH,
  description:
    'where the platform pushes: an absolute http(s) URL without credentials that resolves to public addresses (loopback and private ones too with EARSHOT_PUSH_ALLOW_PRIVATE=1)',
  [RULE]: `must be an absolute http:// or https:// URL of at most ${MAX_URL_LENGTH} characters`,
})
const EventTypes = Type.Array(Type.Enum(EVENT_TYPES), {
  minItems: 1,
  uniqueItems: true,
  description: 'the event types pushed to it (default: every event type)',
  [RULE]: `must be a non-empty list of distinct event types among ${EVENT_TYPES.join(', ')}`,
})
const Description = Type.String({
  maxLength: MAX_DESCRIPTION_LENGTH,
  pattern: '^[^\\u0000]*$',
  description: "for operators: what the endpoint is for (default '')",
  [RULE]: `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters, without U+0000`,
})
const Enabled = Type.Boolean({
  description:
    'false holds its open deliveries, and those of new events, until it is true again (default true)',
  [RULE]: 'must be true or false',
})
const MaxPerSecond = Type.Union([Type.Integer({ minimum: 1, maximum: MAX_PER_SECOND }), Type.Null()], {
  description: 'deliveries a second at most to it, across every instance; null for no limit (the default)',
  [RULE]: `must be an integer from 1 to ${MAX_PER_SECOND}, or null for no limit`,
})

const settings = {
  eventTypes: Type.Optional(EventTypes),
  description: Type.Optional(Description),
  enabled: Type.Optional(Enabled),
  maxPerSecond: Type.Optional(MaxPerSecond),
}
const onlyTheseFields = {
  additionalProperties: false,
  [UNKNOWN_FIELD_RULE]:
    'is not a field of an endpoint: give url, eventTypes, description, enabled, maxPerSecond',
}

/** A new endpoint. */
export const NewEndpointSchema = Type.Object({ url: Url, ...settings }, onlyTheseFields)
export const NewEndpoint = messageParser(NewEndpointSchema)

const DiscardHeld = Type.Boolean({
  description:
    'with "enabled": true, cancels the deliveries it held (and those queued behind them) instead of resuming them',
  [RULE]: 'must be true or false',
})

/** The fields of an endpoint to change; those absent stay as they are. */
export const EndpointChangesSchema = Type.Object(
  { url: Type.Optional(Url), ...settings, discardHeld: Type.Optional(DiscardHeld) },
  {
    ...onlyTheseFields,
    [UNKNOWN_FIELD_RULE]:
      'is not a field of an endpoint: give url, eventTypes, description, enabled, maxPerSecond, discardHeld',
  },
)
export const EndpointChanges = messageParser(EndpointChangesSchema)

export const EndpointParams = Type.Object({
  enterpriseId: Type.Integer({ minimum: 1, description: 'the enterprise' }),
  endpointId: Type.Integer({ minimum: 1, description: 'the endpoint' }),
})

/** The URL as stored (normalized), once the address policy allows it; its refusals name the field `url`. */
export async function endpointUrl(
  url: string,
  policy: { pushAllowPrivate: boolean; pushPorts: readonly string[] },
): Promise<string> {
  try {
    return (await checkPushUrl(url, policy.pushAllowPrivate, undefined, policy.pushPorts)) as string
  } catch (error) {
    if (!(error instanceof InvalidParameterError)) throw error
    throw new InvalidParameterError('url', error.message.replace(/^pushUrl: /, ''))
  }
}
