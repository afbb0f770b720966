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
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject, WITH_BODY } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import { replaceWithPushUrl } from './endpoint-store.js'
import { EnabledPushUrlSchema, PushUrlListSchema, PushUrlSetSchema } from './push-answers.js'
import { enablePushUrl, getPushUrl, listPushUrls } from './push-url-health.js'

const URL_RULE = 'must be the push URL, an absolute http:// or https:// URL'
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
  { additionalProperties: false, [UNKNOWN_FIELD_RULE]: 'is not a field of an enable; give only url' },
)
const endpointEnable = messageParser(PushUrlEnableSchema, ({ url }) => {
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
  summary: 'Set or clear the push URL: the enterprise then has one endpoint, for every event type (or none)',
  params: EnterpriseParams,
  body: { json: PushUrlChangeSchema },
  answer: { description: 'Set', payload: { json: PushUrlSetSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function setPushUrlHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const { pushUrl } = PushUrlChange.parse(jsonObject(request.body))
      const checked = await checkPushUrl(
        pushUrl,
        context.config.pushAllowPrivate,
        undefined,
        context.config.pushPorts,
      )
      // Its open deliveries go to the new URL (resumed if they were held), unless that one is disabled too.
      const replaced = await replaceWithPushUrl(context.db, enterpriseId, checked)
      if (!replaced) throw noSuchEnterprise(enterpriseId)
      return { enterpriseId, pushUrl: checked, ...replaced }
    },
}

const listPushUrlsRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listPushUrls'),
  tag: 'endpoints',
  summary: 'List push URLs with their health',
  answer: { description: 'By URL', payload: { json: PushUrlListSchema } },
  refusals: [],
  handle: (context) => async () => ({ pushUrls: await listPushUrls(context.db) }),
}

const enablePushUrlRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('enablePushUrl'),
  tag: 'endpoints',
  summary: 'Enable a push URL again: the deliveries it held go out in due order',
  body: { json: PushUrlEnableSchema },
  answer: { description: 'Enabled', payload: { json: EnabledPushUrlSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function enable(request) {
      const url = urlOf(request.body)
      const enabled = await enablePushUrl(context.db, url)
      const endpoint = enabled && (await getPushUrl(context.db, url))
      if (!enabled || !endpoint) {
        throw new ApiError(
          ResponseCode.NOT_FOUND,
          `no enterprise pushes to ${url} and it has no health record`,
        )
      }
      return { url, enabled: true, ...enabled, endpoint }
    },
}

export const pushUrlRoutes = [setPushUrlRoute, listPushUrlsRoute, enablePushUrlRoute]

/** The URL of an enable, normalized as enterprises' push URLs are stored. */
function urlOf(body: unknown): string {
  return new URL(endpointEnable.parse(jsonObject(body, '{"url"}')).url).href
}
