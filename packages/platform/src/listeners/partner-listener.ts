import { ResponseCode } from '@earshot/protocol'
import rateLimitPlugin from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import type { RateLimitCheck } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context/platform-context.js'
import { pushWebhook } from '../dispatch/push-webhook.js'
import { apiReference } from '../docs/api-reference.js'
import { partnerApiDocument } from '../docs/partner-document.js'
import { ApiError } from '../http/api-error.js'
import { createServer, type Lifecycle } from '../http/create-server.js'
import { parseJsonStrictly, requireJsonContentType } from '../http/json-body.js'
import { mountRoutes } from '../http/route-spec.js'
import { portalPage } from '../portal/portal-page.js'
import { partnerRoutes } from './partner-routes.js'

/** Made once per process: the document depends on the routes alone. */
const partnerDocument = partnerApiDocument(partnerRoutes, [pushWebhook])

/** The partner-facing API: token, audios, their changes and callback under /openapi/v1, plus health probes. */
export async function buildPartnerApi(
  context: PlatformContext,
  lifecycle: Lifecycle,
): Promise<FastifyInstance> {
  const app = createServer(context, {
    bodyLimit: context.config.bodyLimitBytes,
    requestTimeoutSeconds: context.config.requestTimeoutSeconds,
  })
  parseJsonStrictly(app)
  context.metrics.instrumentHttp(app, 'partner')
  await app.register(rateLimitPlugin, { global: false })

  const limiter =
    context.config.rateLimitPerMinute > 0
      ? app.createRateLimit({
          max: context.config.rateLimitPerMinute,
          timeWindow: 60_000,
          keyGenerator: (request) => String((request as { rateLimitKey?: number }).rateLimitKey),
        })
      : undefined
  const rateLimit: RateLimitCheck = async (request, enterpriseId) => {
    if (!limiter) return
    ;(request as { rateLimitKey?: number }).rateLimitKey = enterpriseId
    const result = await limiter(request)
    if (!result.isAllowed && result.isExceeded) {
      throw new ApiError(
        ResponseCode.RATE_LIMITED,
        'rate limit exceeded for this enterprise; retry after Retry-After seconds',
        {
          'retry-after': String(result.ttlInSeconds),
        },
      )
    }
  }

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    if (lifecycle.shuttingDown) {
      reply.header('connection', 'close')
      return done(
        new ApiError(ResponseCode.UNAVAILABLE, 'the platform is shutting down; retry on another instance'),
      )
    }
    try {
      if (request.method === 'POST') requireJsonContentType(request)
      done()
    } catch (error) {
      done(error as Error)
    }
  })

  mountRoutes(app, partnerRoutes, { context, rateLimit, lifecycle })
  apiReference(app, partnerDocument)
  portalPage(app)
  return app
}
