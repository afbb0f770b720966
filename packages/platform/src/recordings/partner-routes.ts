import { CallbackPlaintext, RecordingFilter, ResponseCode, SPEC_VERSION } from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import { authenticate } from '../auth/authenticate.js'
import { type RateLimitCheck, replySealed } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context.js'
import { ApiError } from '../http/api-error.js'
import { confirmReceipt, queryRecordings } from './recording-store.js'

/** POST /openapi/v1/audios (contract §4.2) and POST /openapi/v1/callback (contract §4.3). */
export function recordingRoutes(
  app: FastifyInstance,
  context: PlatformContext,
  rateLimit: RateLimitCheck,
): void {
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

  app.post('/openapi/v1/callback', async (request, reply) => {
    const opened = await authenticate(context, request, rateLimit)
    const { audioId } = CallbackPlaintext.parse(opened.plaintext)
    if (!(await confirmReceipt(context.db, opened.enterpriseId, audioId))) {
      throw new ApiError(
        ResponseCode.NOT_FOUND,
        `audioId ${JSON.stringify(audioId)} is not a recording of this enterprise`,
      )
    }
    return reply.send({ code: ResponseCode.OK, msg: 'success', requestId: request.id })
  })
}
