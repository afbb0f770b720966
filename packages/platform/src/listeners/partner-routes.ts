import { ResponseCode } from '@earshot/protocol'
import type { PartnerEnv } from '../auth/envelope-request.js'
import { tokenRoute } from '../auth/token-route.js'
import { changeRoute } from '../changes/change-route.js'
import { erasureKeyRoute } from '../erasures/erasure-routes.js'
import type { RouteSpec } from '../http/route-spec.js'
import { mediaRoute } from '../media/media-route.js'
import { portalLinkRoute } from '../portal/portal-link-route.js'
import { portalRoutes } from '../portal/portal-routes.js'
import { callbackRoute } from '../receipts/callback-route.js'
import { queryRoute } from '../recordings/query-route.js'
import { selfServiceRoutes } from '../self-service/self-service-routes.js'
import { healthRoute, readinessRoute } from './health-routes.js'

/** Every route of the partner listener: the API under /openapi/v1, the portal's under /portal, and the health probes. */
export const partnerRoutes: readonly RouteSpec<PartnerEnv>[] = [
  tokenRoute,
  queryRoute,
  changeRoute,
  callbackRoute,
  mediaRoute,
  ...selfServiceRoutes,
  portalLinkRoute,
  ...portalRoutes,
  erasureKeyRoute,
  healthRoute('health', [ResponseCode.UNAVAILABLE]),
  readinessRoute,
]
