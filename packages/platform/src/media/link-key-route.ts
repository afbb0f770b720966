import { defineRoute } from '../http/route-spec.js'
import type { MediaContext } from './media-context.js'
import { rotateLinkKeyContract } from './media-contract.js'

/** POST /admin/v1/media/rotate-link-key: new links are signed with a new key, on every instance within seconds. */
export const linkKeyRoute = defineRoute(
  rotateLinkKeyContract,
  (context: MediaContext) =>
    async function rotateLinkKey(request) {
      const retireOthers = (request.body as { retireOthers?: unknown } | undefined)?.retireOthers === true
      const keyId = await context.media.links.rotate(retireOthers, context.db)
      return { keyId, retiredOthers: retireOthers }
    },
)
