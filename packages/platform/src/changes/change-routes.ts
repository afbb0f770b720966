import { ChangesRequest, SPEC_VERSION } from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import { authenticate } from '../auth/authenticate.js'
import { type RateLimitCheck, replySealed } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context.js'
import { readChanges } from './change-feed.js'

/** POST /openapi/v1/audios/changes: same envelope, token and replay guard as the query. */
export function changeRoutes(
  app: FastifyInstance,
  context: PlatformContext,
  rateLimit: RateLimitCheck,
): void {
  app.post('/openapi/v1/audios/changes', async (request, reply) => {
    const opened = await authenticate(context, request, rateLimit)
    const page = await readChanges(context.db, opened.enterpriseId, ChangesRequest.parse(opened.plaintext))
    return replySealed(request, reply, opened, { specVersion: SPEC_VERSION, ...page })
  })
}
