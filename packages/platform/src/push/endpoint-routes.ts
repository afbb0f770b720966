import {
  InvalidParameterError,
  messageParser,
  ResponseCode,
  RULE,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import type { PlatformContext } from '../context.js'
import { PushUrlChange } from '../enterprises/enterprise-input.js'
import { noSuchEnterprise } from '../enterprises/enterprise-params.js'
import { setPushUrl } from '../enterprises/enterprise-store.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { resumeHeld } from './delivery-store.js'
import { type EndpointView, enableEndpoint, getEndpoint, listEndpoints } from './endpoint-health.js'

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

/**
 * The operators' push URLs: set an enterprise's, list every push URL with its health and why, and enable a
 * disabled (or failing) one again, which resumes the deliveries it held.
 *
 * - PUT  {prefix}/enterprises/:enterpriseId/push-url {pushUrl} → {enterpriseId, pushUrl}
 * - GET  {prefix}/endpoints → {endpoints}, by URL
 * - POST {prefix}/endpoints/enable {url} → {url, enabled: true, resumed, replayed, endpoint}
 */
export function endpointRoutes(app: FastifyInstance, context: PlatformContext, prefix: string): void {
  const { db, config } = context

  app.put(`${prefix}/enterprises/:enterpriseId/push-url`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
    const { pushUrl } = PushUrlChange.parse(jsonObject(request.body))
    const checked = await checkPushUrl(pushUrl, config.pushAllowPrivate)
    if (!(await setPushUrl(db, enterpriseId, checked))) throw noSuchEnterprise(enterpriseId)
    // Deliveries held for a disabled push URL go to the new one, unless it is disabled too.
    await resumeHeld(db, [enterpriseId])
    return { enterpriseId, pushUrl: checked }
  })

  app.get(
    `${prefix}/endpoints`,
    async (): Promise<{ endpoints: EndpointView[] }> => ({ endpoints: await listEndpoints(db) }),
  )

  app.post(`${prefix}/endpoints/enable`, async (request) => {
    const url = urlOf(request.body)
    const enabled = await enableEndpoint(db, url)
    const endpoint = enabled && (await getEndpoint(db, url))
    if (!enabled || !endpoint) {
      throw new ApiError(ResponseCode.NOT_FOUND, `no enterprise pushes to ${url} and it has no health record`)
    }
    return { url, enabled: true, ...enabled, endpoint }
  })
}

/** The URL of an enable, normalized as enterprises' push URLs are stored. */
function urlOf(body: unknown): string {
  return new URL(endpointEnable.parse(jsonObject(body, '{"url"}')).url).href
}
