import { messageParser, mintPortalLinkContract, PortalLinkRequestSchema } from '@earshot/protocol'
import type { PlatformContext } from '../context/platform-context.js'
import { sealedSelfServiceRoute } from '../self-service/self-service-routes.js'
import { mintPortalLink } from './portal-links.js'

const PortalLinkRequest = messageParser(PortalLinkRequestSchema)

/** Where portal links point: the partner listener's public URL (EARSHOT_PUBLIC_URL, else where it listens). */
export function portalBaseUrl(context: PlatformContext): string {
  return context.media.publicUrl
}

/** POST /openapi/v1/portal/link: the partner mints a link into its own portal (for its own dashboard, say). */
export const portalLinkRoute = sealedSelfServiceRoute({
  contract: mintPortalLinkContract,
  changes: true,
  async run({ context, enterpriseId }, body) {
    const { access = 'view' } = PortalLinkRequest.parse(body)
    return mintPortalLink(
      context.db,
      { enterpriseId, access, operatorView: false, mintedBy: `enterprise ${enterpriseId} (partner API)` },
      {
        baseUrl: portalBaseUrl(context),
        ttlSeconds: context.config.portalLinkSeconds,
        nowMs: context.clock(),
        randomBytes: context.randomBytes,
      },
    )
  },
})
