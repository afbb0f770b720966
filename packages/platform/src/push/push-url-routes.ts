import { InvalidParameterError, messageParser, ResponseCode } from '@earshot/protocol'
import type { PlatformContext } from '../context/platform-context.js'
import { PushUrlChange } from '../enterprises/enterprise-input.js'
import { noSuchEnterprise } from '../enterprises/enterprise-params.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import { replaceWithPushUrl } from './endpoint-store.js'
import {
  enablePushUrlContract,
  listPushUrlsContract,
  PushUrlEnableSchema,
  setPushUrlContract,
  URL_RULE,
} from './push-url-contract.js'
import { enablePushUrl, getPushUrl, listPushUrls } from './push-url-health.js'

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

const setPushUrlRoute = defineRoute(
  setPushUrlContract,
  (context: PlatformContext) =>
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
)

const listPushUrlsRoute = defineRoute(listPushUrlsContract, (context: PlatformContext) => async () => ({
  pushUrls: await listPushUrls(context.db),
}))

const enablePushUrlRoute = defineRoute(
  enablePushUrlContract,
  (context: PlatformContext) =>
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
      return { url, enabled: true as const, ...enabled, endpoint }
    },
)

export const pushUrlRoutes = [setPushUrlRoute, listPushUrlsRoute, enablePushUrlRoute]

/** The URL of an enable, normalized as enterprises' push URLs are stored. */
function urlOf(body: unknown): string {
  return new URL(endpointEnable.parse(jsonObject(body, '{"url"}')).url).href
}
