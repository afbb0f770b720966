import {
  InvalidParameterError,
  messageParser,
  ResponseCode,
  RULE,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import Type from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { PushUrlChange, PushUrlChangeSchema } from '../enterprises/enterprise-input.js'
import { EnterpriseParams, noSuchEnterprise } from '../enterprises/enterprise-params.js'
import { setPushUrl } from '../enterprises/enterprise-store.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject, WITH_BODY } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import { resumeHeld } from './delivery-store.js'
import { enableEndpoint, getEndpoint, listEndpoints } from './endpoint-health.js'
import { EnabledEndpointSchema, EndpointListSchema, PushUrlSetSchema } from './push-answers.js'

const URL_RULE = 'must be the push URL, an absolute http:// or https:// URL'
const MAX_URL_LENGTH = 2048

/** An enable: the push URL, compared as enterprises' push URLs are stored (normalized). */
export const EndpointEnableSchema = Type.Object(
  {
    url: Type.String({
      maxLength: MAX_URL_LENGTH,
      description: 'the push URL, as an enterprise has it (it is normalized before it is compared)',
      [RULE]: URL_RULE,
    }),
  },
  { additionalProperties: false, [UNKNOWN_FIELD_RULE]: 'is not a field of an enable; give only url' },
)
const endpointEnable = messageParser(EndpointEnableSchema, ({ url }) => {
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') {
    throw new InvalidParameterError('url', URL_RULE)
  }
})

/*
 * The operators' push URLs: set an enterprise's, list every push URL with its health and why, and enable a
 * disabled (or failing) one again, which resumes the deliveries it held.
 */

const setPushUrlRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('setPushUrl'),
  tag: 'enterprises',
  summary: 'Set or clear the push URL',
  params: EnterpriseParams,
  body: { json: PushUrlChangeSchema },
  answer: { description: 'Set', payload: { json: PushUrlSetSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function setPushUrlHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const { pushUrl } = PushUrlChange.parse(jsonObject(request.body))
      const checked = await checkPushUrl(pushUrl, context.config.pushAllowPrivate)
      if (!(await setPushUrl(context.db, enterpriseId, checked))) throw noSuchEnterprise(enterpriseId)
      // Deliveries held for a disabled push URL go to the new one, unless it is disabled too.
      await resumeHeld(context.db, [enterpriseId])
      return { enterpriseId, pushUrl: checked }
    },
}

const listEndpointsRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listEndpoints'),
  tag: 'endpoints',
  summary: 'List push URLs with their health',
  answer: { description: 'By URL', payload: { json: EndpointListSchema } },
  refusals: [],
  handle: (context) => async () => ({ endpoints: await listEndpoints(context.db) }),
}

const enableEndpointRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('enableEndpoint'),
  tag: 'endpoints',
  summary: 'Enable a push URL again: the deliveries it held go out in due order',
  body: { json: EndpointEnableSchema },
  answer: { description: 'Enabled', payload: { json: EnabledEndpointSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function enable(request) {
      const url = urlOf(request.body)
      const enabled = await enableEndpoint(context.db, url)
      const endpoint = enabled && (await getEndpoint(context.db, url))
      if (!enabled || !endpoint) {
        throw new ApiError(
          ResponseCode.NOT_FOUND,
          `no enterprise pushes to ${url} and it has no health record`,
        )
      }
      return { url, enabled: true, ...enabled, endpoint }
    },
}

export const endpointRoutes = [setPushUrlRoute, listEndpointsRoute, enableEndpointRoute]

/** The URL of an enable, normalized as enterprises' push URLs are stored. */
function urlOf(body: unknown): string {
  return new URL(endpointEnable.parse(jsonObject(body, '{"url"}')).url).href
}
