import {
  EndpointDescription,
  EndpointEnabled,
  EndpointEventTypes,
  EndpointMaxPerSecond,
  EndpointUrl,
  InvalidParameterError,
  messageParser,
  RULE,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import Type from 'typebox'
import { checkPushUrl } from '../http/address-policy.js'

const settings = {
  eventTypes: Type.Optional(EndpointEventTypes),
  description: Type.Optional(EndpointDescription),
  enabled: Type.Optional(EndpointEnabled),
  maxPerSecond: Type.Optional(EndpointMaxPerSecond),
}
const onlyTheseFields = {
  additionalProperties: false,
  [UNKNOWN_FIELD_RULE]:
    'is not a field of an endpoint: give url, eventTypes, description, enabled, maxPerSecond',
}

/** A new endpoint. */
export const NewEndpointSchema = Type.Object({ url: EndpointUrl, ...settings }, onlyTheseFields)
export const NewEndpoint = messageParser(NewEndpointSchema)

const DiscardHeld = Type.Boolean({
  description:
    'with "enabled": true, cancels the deliveries it held (and those queued behind them) instead of resuming them',
  [RULE]: 'must be true or false',
})

/** The fields of an endpoint to change; those absent stay as they are. */
export const EndpointChangesSchema = Type.Object(
  { url: Type.Optional(EndpointUrl), ...settings, discardHeld: Type.Optional(DiscardHeld) },
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
