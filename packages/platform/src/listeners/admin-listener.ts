import { ResponseCode } from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import { adminOperationsModule } from '../admin-client/admin-operations-data.js'
import { auditedDatabase } from '../audit/audited-changes.js'
import { consoleAssets } from '../console/console-assets.js'
import type { PlatformContext } from '../context/platform-context.js'
import { adminApiDocument } from '../docs/admin-document.js'
import { apiReference } from '../docs/api-reference.js'
import { ApiError } from '../http/api-error.js'
import { createServer, type Lifecycle } from '../http/create-server.js'
import { mountRoutes } from '../http/route-spec.js'
import { JSON_LINES_TYPES } from '../imports/import-contract.js'
import {
  AUDIO_TYPES,
  audioUploadRoute,
  requireAudioLength,
  requireAudioType,
} from '../media/audio-upload-route.js'
import { type AccessContext, auditedHandler, guardAdminRoutes, isPublicPath } from './admin-access.js'
import { adminRoutes } from './admin-routes.js'

/** Made once per process: the document depends on the routes alone. */
const adminDocument = adminApiDocument(adminRoutes)

/**
 * The operators' API, on its own listener bound to loopback by default; who may call each route is decided
 * by admin-access.ts. Successes answer with the resource itself; refusals with {code, msg, requestId}.
 */
export async function buildAdminApi(
  context: PlatformContext,
  lifecycle: Lifecycle,
  access: AccessContext,
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
  // Uploaded audio too, streamed to the media store under EARSHOT_MEDIA_MAX_BYTES (audio-upload-route.ts).
  app.addContentTypeParser(AUDIO_TYPES, (_request, payload, done) => done(null, payload))

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (lifecycle.shuttingDown && !isPublicPath(request.url)) {
      throw new ApiError(ResponseCode.UNAVAILABLE, 'the platform is shutting down')
    }
  })
  guardAdminRoutes(app, adminRoutes, access)
  // Before the body is parsed: a type no parser takes would be refused with the JSON routes' rule, and
  // a client waiting for 100 Continue is told a declared length over the limit before it sends a byte.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.routeOptions.url !== audioUploadRoute.path) return done()
    try {
      requireAudioType(request.headers['content-type'], context.config.mediaAudioTypes)
      requireAudioLength(request, context.config.mediaMaxBytes)
      done()
    } catch (error) {
      done(error as Error)
    }
  })

  mountRoutes(app, adminRoutes.map(auditedHandler), {
    ...context,
    db: auditedDatabase(context.db, context.clock),
  })
  apiReference(app, adminDocument)
  consoleAssets(app, '/console', { 'admin-operations.js': adminOperationsModule() })

  return app
}
