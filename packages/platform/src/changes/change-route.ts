import { ChangePageSchema, ChangesRequest, ChangesRequestSchema, SPEC_VERSION } from '@earshot/protocol'
import { authenticate, BEARER_REFUSALS } from '../auth/authenticate.js'
import { type PartnerEnv, replySealed } from '../auth/envelope-request.js'
import type { RouteSpec } from '../http/route-spec.js'
import { readChanges } from './change-feed.js'

/** POST /openapi/v1/audios/changes: same envelope, token and replay guard as the query. */
export const changeRoute: RouteSpec<PartnerEnv> = {
  method: 'POST',
  path: '/openapi/v1/audios/changes',
  operationId: 'readChanges',
  tag: 'changes',
  summary: 'Read the change feed',
  body: { sealed: ChangesRequestSchema },
  answer: { description: 'A page of changes, sealed', payload: { result: ChangePageSchema, sealed: true } },
  refusals: BEARER_REFUSALS,
  handle: ({ context, rateLimit }) =>
    async function changes(request, reply) {
      const opened = await authenticate(context, request, rateLimit)
      const asked = ChangesRequest.parse(opened.plaintext)
      const audioLink = await context.media.audioLinks(opened.enterpriseId)
      const page = await readChanges(context.db, opened.enterpriseId, asked, audioLink)
      return replySealed(request, reply, opened, { specVersion: SPEC_VERSION, ...page })
    },
}
