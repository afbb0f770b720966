import { component, ResponseCode, RULE, routeContract, UNKNOWN_FIELD_RULE } from '@earshot/protocol'
import Type from 'typebox'
import { WITH_BODY } from '../http/admin-refusals.js'
import { EnabledPushUrlSchema, PushUrlListSchema } from './push-url-answers.js'

/* The operators' push URLs: list them with their health, enable one again. */

export const URL_RULE = 'must be the push URL, an absolute http:// or https:// URL'
const MAX_URL_LENGTH = 2048

/** An enable: the push URL, compared as enterprises' push URLs are stored (normalized). */
export const PushUrlEnableSchema = Type.Object(
  {
    url: Type.String({
      maxLength: MAX_URL_LENGTH,
      description: 'the push URL, as an enterprise has it (it is normalized before it is compared)',
      [RULE]: URL_RULE,
    }),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of an enable; give only url',
    ...component({ name: 'EndpointEnable' }),
  },
)
export const listPushUrlsContract = routeContract({
  method: 'GET',
  path: '/admin/v1/push-urls',
  operationId: 'listPushUrls',
  tag: 'endpoints',
  summary: 'List push URLs with their health',
  answer: { description: 'By URL', payload: { json: PushUrlListSchema } },
  refusals: [],
  permission: 'endpoints.read',
})

export const enablePushUrlContract = routeContract({
  method: 'POST',
  path: '/admin/v1/push-urls/enable',
  operationId: 'enablePushUrl',
  tag: 'endpoints',
  summary: 'Enable a push URL again: the deliveries it held go out in due order',
  body: { json: PushUrlEnableSchema },
  answer: { description: 'Enabled', payload: { json: EnabledPushUrlSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'endpoints.write',
})

export const pushUrlContracts = [listPushUrlsContract, enablePushUrlContract] as const
