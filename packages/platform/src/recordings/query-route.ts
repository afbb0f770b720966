import { RecordingFilter, RecordingFilterSchema, RecordingListSchema, SPEC_VERSION } from '@earshot/protocol'
import { authenticate, BEARER_REFUSALS } from '../auth/authenticate.js'
import { type PartnerEnv, replySealed } from '../auth/envelope-request.js'
import type { RouteSpec } from '../http/route-spec.js'
import { queryRecordings } from './recording-store.js'

/** POST /openapi/v1/audios: a page of the enterprise's recordings matching a filter, and their total. */
export const queryRoute: RouteSpec<PartnerEnv> = {
  method: 'POST',
  path: '/openapi/v1/audios',
  operationId: 'queryRecordings',
  tag: 'recordings',
  summary: 'Query recordings',
  body: { sealed: RecordingFilterSchema },
  answer: {
    description: 'A page of recordings, sealed',
    payload: { result: RecordingListSchema, sealed: true },
  },
  refusals: BEARER_REFUSALS,
  handle: ({ context, rateLimit }) =>
    async function queryAudios(request, reply) {
      const opened = await authenticate(context, request, rateLimit)
      const filter = RecordingFilter.parse(opened.plaintext)
      const audioLink = await context.media.audioLinks(opened.enterpriseId)
      const page = await queryRecordings(context.db, opened.enterpriseId, filter, audioLink)
      return replySealed(request, reply, opened, {
        specVersion: SPEC_VERSION,
        page: filter.page,
        size: filter.size,
        total: page.total,
        items: page.items,
      })
    },
}
