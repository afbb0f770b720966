import { InvalidParameterError, messageParser, ResponseCode } from '@earshot/protocol'
import { scopeOf } from '../access/principal.js'
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
import { enablePushUrl, getPushUrl, listPushUrls, type PushUrlView } from './push-url-health.js'

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

const listPushUrlsRoute = defineRoute(
  listPushUrlsContract,
  (context: PlatformContext) => async (request) => ({
    pushUrls: pushUrlsSeen(await listPushUrls(context.db), scopeOf(request)),
  }),
)

const enablePushUrlRoute = defineRoute(
  enablePushUrlContract,
  (context: PlatformContext) =>
    async function enable(request) {
      const url = urlOf(request.body)
      const scope = scopeOf(request)
      // Enabling resumes every enterprise's deliveries to the URL: one limited to some may only if it sees them all.
      const before = scope && (await getPushUrl(context.db, url))
      if (before && !before.enterprises.every((id) => scope.includes(id))) throw noSuchPushUrl(url)
      const enabled = await enablePushUrl(context.db, url)
      const endpoint = enabled && (await getPushUrl(context.db, url))
      if (!enabled || !endpoint) throw noSuchPushUrl(url)
      return { url, enabled: true as const, ...enabled, endpoint }
    },
)

export const pushUrlRoutes = [listPushUrlsRoute, enablePushUrlRoute]

function noSuchPushUrl(url: string): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no enterprise pushes to ${url} and it has no health record`)
}

/** The push URLs a request may see: those an enterprise in its scope pushes to, naming only those enterprises. */
function pushUrlsSeen(urls: PushUrlView[], scope: readonly number[] | null): PushUrlView[] {
  if (scope === null) return urls
  return urls
    .map((view) => ({ ...view, enterprises: view.enterprises.filter((id) => scope.includes(id)) }))
    .filter((view) => view.enterprises.length > 0)
}

/** The URL of an enable, normalized as enterprises' push URLs are stored. */
function urlOf(body: unknown): string {
  return new URL(endpointEnable.parse(jsonObject(body, '{"url"}')).url).href
}
