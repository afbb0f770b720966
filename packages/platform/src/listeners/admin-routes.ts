import { auditRoutes } from '../access/audit-routes.js'
import { keyRoutes } from '../access/key-routes.js'
import { operatorRoutes } from '../access/operator-routes.js'
import { sessionRoutes } from '../access/session-routes.js'
import { ssoRoutes } from '../access/sso-routes.js'
import { consoleRoutes } from '../console/console-routes.js'
import type { PlatformContext } from '../context/platform-context.js'
import { deliveryRoutes } from '../deliveries/delivery-routes.js'
import { endpointRoutes } from '../endpoints/endpoint-routes.js'
import { enterpriseRoutes } from '../enterprises/enterprise-routes.js'
import { erasureAdminRoutes } from '../erasures/erasure-routes.js'
import type { RouteSpec } from '../http/route-spec.js'
import { importRoute } from '../imports/import-route.js'
import { audioUploadRoute } from '../media/audio-upload-route.js'
import { linkKeyRoute } from '../media/link-key-route.js'
import { portalAdminRoutes } from '../portal/portal-admin-routes.js'
import { pushUrlRoutes } from '../push-urls/push-url-routes.js'
import { receiverCheckRoute } from '../receiver-check/receiver-check-route.js'
import { recordingListRoute } from '../recordings/recording-list-route.js'
import { recordingAdminRoutes } from '../recordings/recording-routes.js'
import { healthRoute, metricsRoute } from './health-routes.js'

/** Every route of the admin listener: what it mounts, and what its document lists. */
export const adminRoutes: readonly RouteSpec<PlatformContext>[] = [
  healthRoute('operations', []),
  metricsRoute,
  ...enterpriseRoutes,
  recordingListRoute,
  ...recordingAdminRoutes,
  audioUploadRoute,
  linkKeyRoute,
  importRoute,
  ...deliveryRoutes,
  ...endpointRoutes,
  receiverCheckRoute,
  ...pushUrlRoutes,
  ...portalAdminRoutes,
  ...erasureAdminRoutes,
  ...consoleRoutes,
  ...sessionRoutes,
  ...ssoRoutes,
  ...operatorRoutes,
  ...keyRoutes,
  ...auditRoutes,
]
