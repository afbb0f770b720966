import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { principalOf, scopeOf } from '../access/principal.js'
import type { PlatformContext } from '../context/platform-context.js'
import { noSuchEnterprise } from '../enterprises/enterprise-params.js'
import { listEnterprises } from '../enterprises/enterprise-store.js'
import { ID_RULE, idParam, jsonObject, positiveInteger } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import {
  createOperatorViewContract,
  createPortalLinkContract,
  endPortalSessionContract,
  listPortalSessionsContract,
  NewPortalLink,
} from './portal-admin-contract.js'
import { portalBaseUrl } from './portal-link-route.js'
import { type MintedLink, mintPortalLink, type PortalLinkGrant } from './portal-links.js'
import { endPortalSession, listPortalSessions } from './portal-sessions.js'

/*
 * The operators' portal routes: links minted by an operator (minted_by is their actor id, and the trail
 * has the change with them as its actor), and the portal sessions listed and ended within their scope.
 */

/** Mints a link into an enabled enterprise's portal: 4040 for none, 4030 for a disabled one. */
async function mintFor(
  context: PlatformContext,
  request: FastifyRequest,
  grant: Pick<PortalLinkGrant, 'access' | 'operatorView'>,
): Promise<MintedLink> {
  const enterpriseId = idParam(request, 'enterpriseId')
  const [enterprise] = await listEnterprises(context.db, enterpriseId)
  if (!enterprise) throw noSuchEnterprise(enterpriseId)
  if (enterprise.disabled) {
    throw new ApiError(
      ResponseCode.FORBIDDEN,
      `enterprise ${enterpriseId} is disabled: its portal is closed, and a link into it would not open`,
    )
  }
  return mintPortalLink(
    context.db,
    { enterpriseId, ...grant, mintedBy: principalOf(request).actor.id },
    {
      baseUrl: portalBaseUrl(context),
      ttlSeconds: context.config.portalLinkSeconds,
      nowMs: context.clock(),
      randomBytes: context.randomBytes,
    },
  )
}

const createPortalLinkRoute = defineRoute(
  createPortalLinkContract,
  (context: PlatformContext) =>
    async function createPortalLink(request) {
      const { access = 'view' } = NewPortalLink.parse(jsonObject(request.body ?? {}))
      return mintFor(context, request, { access, operatorView: false })
    },
)

const createOperatorViewRoute = defineRoute(
  createOperatorViewContract,
  (context: PlatformContext) =>
    async function createOperatorViewLink(request) {
      return mintFor(context, request, { access: 'view', operatorView: true })
    },
)

const listPortalSessionsRoute = defineRoute(
  listPortalSessionsContract,
  (context: PlatformContext) =>
    async function listPortalSessionsHandler(request) {
      const given = (request.query as { enterpriseId?: string }).enterpriseId
      const enterpriseId = positiveInteger(given)
      if (given !== undefined && enterpriseId === undefined) {
        throw new InvalidParameterError('enterpriseId', ID_RULE)
      }
      return { sessions: await listPortalSessions(context.db, { enterpriseId, scope: scopeOf(request) }) }
    },
)

const endPortalSessionRoute = defineRoute(
  endPortalSessionContract,
  (context: PlatformContext) =>
    async function endPortalSessionHandler(request) {
      const sessionId = idParam(request, 'sessionId')
      // In a transaction of its own, so that a session not found leaves no row in the trail.
      return context.db.transaction(async (tx) => {
        const ended = await endPortalSession(tx, sessionId, context.clock(), scopeOf(request))
        if (!ended) throw new ApiError(ResponseCode.NOT_FOUND, `no portal session ${sessionId}`)
        return ended
      })
    },
)

export const portalAdminRoutes = [
  createPortalLinkRoute,
  createOperatorViewRoute,
  listPortalSessionsRoute,
  endPortalSessionRoute,
]
