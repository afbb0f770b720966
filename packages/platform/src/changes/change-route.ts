import { ChangesRequest, readChangesContract, SPEC_VERSION } from '@earshot/protocol'
import { authenticate } from '../auth/authenticate.js'
import { type PartnerEnv, replySealed } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context/platform-context.js'
import { defineRoute } from '../http/route-spec.js'
import { readChanges } from './change-feed.js'

/** POST /openapi/v1/audios/changes: same envelope, token and replay guard as the query. */
export const changeRoute = defineRoute(
  readChangesContract,
  ({ context, rateLimit }: PartnerEnv<PlatformContext>) =>
    async function changes(request, reply) {
      const opened = await authenticate(context, request, rateLimit)
      const asked = ChangesRequest.parse(opened.plaintext)
      const audioLink = await context.media.audioLinks(opened.enterpriseId)
      const page = await readChanges(context.db, opened.enterpriseId, asked, audioLink)
      return replySealed(request, reply, opened, { specVersion: SPEC_VERSION, ...page })
    },
)
