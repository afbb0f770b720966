import type { FastifyRequest } from 'fastify'
import { appendToChain } from '../audit/audit-chain.js'
import { sourceOf } from '../audit/audit-entry.js'
import type { PartnerEnv } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context/platform-context.js'
import { jsonObject } from '../http/admin-params.js'
import { defineRoute, type RouteSpec } from '../http/route-spec.js'
import { type SelfServiceAction, selfServiceActions } from '../self-service/self-service-actions.js'
import { runAction } from '../self-service/self-service-routes.js'
import {
  portalCookie,
  portalIsSecure,
  portalSessionFor,
  portalToken,
  requireAccess,
  sessionActor,
} from './portal-access.js'
import {
  enterPortalContract,
  PORTAL_PATH,
  portalActionContract,
  portalSessionContract,
  portalSignOutContract,
} from './portal-contract.js'
import { spendPortalLink } from './portal-links.js'
import { sendRefusedLink } from './portal-refused-page.js'
import { endPortalSessionByToken, openPortalSession } from './portal-sessions.js'

/*
 * The portal's routes on the partner listener: entering by a one-time link, the session and signing out,
 * and every self-service action as the browser calls it, each bounded to the session's enterprise and
 * under the enterprise's rate limit as its sealed form is. Answers are never cached.
 */

type Env = PartnerEnv<PlatformContext>

/** What every answer to a link says: not to keep it, and not to pass the link on as a referrer. */
const NOT_CACHED = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }

/** Spends a link and opens its session, in one transaction with its row in the trail; undefined when spent. */
function enter(context: PlatformContext, request: FastifyRequest, link: string) {
  const nowMs = context.clock()
  return context.db.transaction(async (tx) => {
    const grant = await spendPortalLink(tx, link, nowMs)
    if (!grant) return undefined
    const source = sourceOf(request)
    const opened = await openPortalSession(tx, grant, {
      nowMs,
      ttlSeconds: context.config.portalSessionSeconds,
      randomBytes: context.randomBytes,
      ...source,
    })
    const { enterpriseId, access, operatorView, mintedBy } = grant
    await appendToChain(tx, {
      at: new Date(nowMs).toISOString(),
      actor: sessionActor({ sessionId: opened.sessionId, enterpriseId }),
      operation: enterPortalContract.operationId,
      target: { enterpriseId },
      before: null,
      after: { access, operatorView, mintedBy },
      ...source,
      outcome: 'ok',
    })
    return opened
  })
}

const enterPortalRoute = defineRoute(
  enterPortalContract,
  ({ context }: Env) =>
    async function enterPortal(request, reply) {
      // Link previews (chats, mail) send HEAD before the partner opens the link: only a GET spends it.
      if (request.method === 'HEAD') return reply.headers(NOT_CACHED).type('text/html; charset=utf-8').send()
      const { link } = request.params as { link: string }
      const opened = await enter(context, request, link)
      if (!opened) return sendRefusedLink(reply, context.config.portalLinkSeconds)
      const maxAge = context.config.portalSessionSeconds
      return reply
        .headers({
          'set-cookie': portalCookie(opened.token, portalIsSecure(context), maxAge),
          ...NOT_CACHED,
        })
        .redirect(PORTAL_PATH, 303)
    },
)

const portalSessionRoute = defineRoute(
  portalSessionContract,
  ({ context, rateLimit }: Env) =>
    async function portalSession(request, reply) {
      const session = await portalSessionFor(context, request)
      await rateLimit(request, session.enterpriseId)
      reply.header('cache-control', 'no-store')
      return session
    },
)

const portalSignOutRoute = defineRoute(
  portalSignOutContract,
  ({ context }: Env) =>
    async function portalSignOut(request, reply) {
      await portalSessionFor(context, request)
      await endPortalSessionByToken(
        context.db,
        portalToken(request.headers.cookie) as string,
        context.clock(),
      )
      reply.headers({
        'set-cookie': portalCookie('', portalIsSecure(context), 0),
        'cache-control': 'no-store',
      })
      return { signedOut: true as const }
    },
)

/** A self-service action as the portal serves it: its session's enterprise, its access checked, a change audited. */
function portalActionRoute(action: SelfServiceAction): RouteSpec<Env> {
  return {
    ...portalActionContract(action.contract, action.access),
    handle: ({ context, rateLimit }: Env) =>
      async function portalAction(request, reply) {
        const session = await portalSessionFor(context, request)
        await rateLimit(request, session.enterpriseId)
        await requireAccess(context, request, session, action)
        const body = jsonObject(request.body)
        reply.header('cache-control', 'no-store')
        const { enterpriseId } = session
        return runAction(action, { context, enterpriseId, reply }, request, sessionActor(session), body)
      },
  }
}

/** Every route of the portal on the partner listener (its page and assets are served apart). */
export const portalRoutes: readonly RouteSpec<Env>[] = [
  enterPortalRoute,
  portalSessionRoute,
  portalSignOutRoute,
  ...selfServiceActions.map(portalActionRoute),
]
