import { RecordingFilter, SPEC_VERSION } from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import { authenticate } from '../auth/authenticate.js'
import { type RateLimitCheck, replySealed } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context.js'
import { queryRecordings } from './recording-store.js'

/** POST /openapi/v1/audios: a page of the enterprise's recordings matching a filter, and their total. */
export function queryRoute(app: FastifyInstance, context: PlatformContext, rateLimit: RateLimitCheck): void {
  app.post('/openapi/v1/audios', async (request, reply) => {
    const opened = await authenticate(context, request, rateLimit)
    const filter = RecordingFilter.parse(opened.plaintext)
    const page = await queryRecordings(context.db, opened.enterpriseId, filter)
    return replySealed(request, reply, opened, {
      specVersion: SPEC_VERSION,
      page: filter.page,
      size: filter.size,
      total: page.total,
      items: page.items,
    })
  })
}
