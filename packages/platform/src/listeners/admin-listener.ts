import { createHash, timingSafeEqual } from 'node:crypto'
import { ResponseCode } from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import { consoleRoutes } from '../console/console-routes.js'
import type { PlatformContext } from '../context.js'
import { apiReference } from '../docs/api-reference.js'
import { enterpriseRoutes } from '../enterprises/enterprise-routes.js'
import { ApiError } from '../http/api-error.js'
import { bearerCredentials } from '../http/bearer.js'
import { createServer, type Lifecycle } from '../http/create-server.js'
import { importRoute, JSON_LINES_TYPES } from '../imports/import-route.js'
import { deliveryRoutes } from '../push/delivery-routes.js'
import { endpointRoutes } from '../push/endpoint-routes.js'
import { recordingAdminRoutes } from '../recordings/admin-routes.js'

export const ADMIN_PREFIX = '/admin/v1'

/**
 * The operators' API, on its own listener bound to loopback by default and guarded by
 * the admin bearer token. Successes answer with the resource itself; refusals with {code, msg, requestId}.
 */
export async function buildAdminApi(
  context: PlatformContext,
  lifecycle: Lifecycle,
  adminToken: string,
): Promise<FastifyInstance> {
  // An import may upload EARSHOT_ADMIN_BODY_LIMIT slowly, so requests here get the admin timeout.
  const app = createServer(context, {
    bodyLimit: 1024 * 1024,
    requestTimeoutSeconds: context.config.adminRequestTimeoutSeconds,
  })
  context.metrics.instrumentHttp(app, 'admin')
  // JSON Lines import bodies are handed over as the request stream, read line by line under their
  // own, larger limit (json-lines-import.ts).
  app.addContentTypeParser(JSON_LINES_TYPES, (_request, payload, done) => done(null, payload))

  const expected = digest(adminToken)
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (isPublicPath(request.url)) return
    if (lifecycle.shuttingDown) throw new ApiError(ResponseCode.UNAVAILABLE, 'the platform is shutting down')
    const given = bearerCredentials(request.headers.authorization)
    if (!given || !timingSafeEqual(digest(given), expected)) {
      // Closing the connection stops a client without the token from holding it for the admin timeout.
      throw new ApiError(
        ResponseCode.UNAUTHORIZED,
        'the admin API needs "Authorization: Bearer <EARSHOT_ADMIN_TOKEN>"',
        { connection: 'close' },
      )
    }
  })

  app.get('/healthz', async () => ({ status: 'ok' }))

  /** Prometheus metrics; the scraper sends the admin bearer token like any admin client. */
  app.get('/metrics', async (_request, reply) => {
    const { registry } = context.metrics
    return reply.type(registry.contentType).send(await registry.metrics())
  })

  apiReference(app, 'admin')

  enterpriseRoutes(app, context, ADMIN_PREFIX)
  recordingAdminRoutes(app, context, ADMIN_PREFIX)
  importRoute(app, context, ADMIN_PREFIX)
  deliveryRoutes(app, context, ADMIN_PREFIX)
  endpointRoutes(app, context, ADMIN_PREFIX)
  consoleRoutes(app, context, ADMIN_PREFIX)

  return app
}

/**
 * What the admin listener serves without the token: the health probe, the API's description and the
 * console's pages and assets (the console signs in with the token, and sends it on every API call).
 */
const PUBLIC_PATHS = ['/healthz', '/openapi.json']
const PUBLIC_PREFIXES = ['/docs', '/console']

function isPublicPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? ''
  return (
    PUBLIC_PATHS.includes(path) ||
    PUBLIC_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  )
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}
