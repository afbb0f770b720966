import { queryRecordingsContract, RecordingFilter, SPEC_VERSION } from '@earshot/protocol'
import type { BearerContext } from '../auth/authenticate.js'
import { authenticate } from '../auth/authenticate.js'
import { type PartnerEnv, replySealed } from '../auth/envelope-request.js'
import { defineRoute } from '../http/route-spec.js'
import { queryRecordings } from './recording-store.js'
import type { RecordingsContext } from './recordings-context.js'

/** POST /openapi/v1/audios: a page of the enterprise's recordings matching a filter, and their total. */
export const queryRoute = defineRoute(
  queryRecordingsContract,
  ({ context, rateLimit }: PartnerEnv<BearerContext & RecordingsContext>) =>
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
)
