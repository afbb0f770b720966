import { InvalidParameterError, messageParser, ResponseCode } from '@earshot/protocol'
import type { PlatformContext } from '../context/platform-context.js'
import { jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import {
  enablePushUrlContract,
  listPushUrlsContract,
  PushUrlEnableSchema,
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
 * The operators' push URLs: list every push URL with its health and why, and enable a
 * disabled (or failing) one again, which resumes the deliveries it held.
 */

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

export const pushUrlRoutes = [listPushUrlsRoute, enablePushUrlRoute]

/** The URL of an enable, normalized as enterprises' push URLs are stored. */
function urlOf(body: unknown): string {
  return new URL(endpointEnable.parse(jsonObject(body, '{"url"}')).url).href
}
