import { timingSafeEqual } from 'node:crypto'
import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import type { Actor } from '../audit/audit-entry.js'
import { sourceOf } from '../audit/audit-entry.js'
import { appendAudit } from '../audit/audit-trail.js'
import type { PlatformContext } from '../context/platform-context.js'
import { ApiError } from '../http/api-error.js'
import type { SelfServiceAction } from '../self-service/self-service-actions.js'
import { PORTAL_COOKIE } from './portal-contract.js'
import { portalBaseUrl } from './portal-link-route.js'
import { type PortalSession, portalSessionOf } from './portal-sessions.js'

/*
 * Who calls a portal route: the session its cookie stands for, refused (4010) when there is none or it has
 * ended or expired; a POST must carry the session's CSRF token. What a session may do is its access: a view
 * session, and an operator's view whatever its access, only read.
 */

/** How to get into the portal again, for every refusal that ends a visit. */
const HOW_TO_ENTER =
  'open a new portal link: ask your operator for one, run `earshot-partner portal`, or POST /openapi/v1/portal/link'

/** The session cookie: HttpOnly, SameSite=Lax (partners arrive from their own dashboards), the portal's paths only. */
export function portalCookie(token: string, secure: boolean, maxAgeSeconds: number): string {
  return [
    `${PORTAL_COOKIE}=${token}`,
    'Path=/portal',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ')
}

/** Whether partners reach the portal over TLS (EARSHOT_PUBLIC_URL is https): its cookie is then Secure. */
export function portalIsSecure(context: PlatformContext): boolean {
  return portalBaseUrl(context).startsWith('https:')
}

/** The session token of a Cookie header, if any. */
export function portalToken(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=')
    if (name === PORTAL_COOKIE) return value.join('=') || undefined
  }
  return undefined
}

const WHY_NOT: Record<'unknown' | 'ended' | 'expired', string> = {
  unknown: 'this portal session is unknown',
  ended: 'this portal session has ended (signed out, or ended by an operator)',
  expired: 'this portal session has expired',
}

/**
 * The session of a portal request; a POST's CSRF token checked. 4010 without a session, or with one ended
 * or expired; 4030 when its enterprise was disabled.
 */
export async function portalSessionFor(
  context: PlatformContext,
  request: FastifyRequest,
): Promise<PortalSession> {
  const token = portalToken(request.headers.cookie)
  if (token === undefined) {
    throw new ApiError(ResponseCode.UNAUTHORIZED, `no portal session: ${HOW_TO_ENTER}`)
  }
  const session = await portalSessionOf(context.db, token, context.clock())
  if (session === 'disabled') {
    throw new ApiError(
      ResponseCode.FORBIDDEN,
      'the enterprise is disabled: its portal is closed; ask your operator',
    )
  }
  if (typeof session === 'string')
    throw new ApiError(ResponseCode.UNAUTHORIZED, `${WHY_NOT[session]}: ${HOW_TO_ENTER}`)
  if (request.method === 'POST') requireCsrfToken(request.headers['x-csrf-token'], session.csrfToken)
  return session
}

/**
 * Refuses (4010) a POST without the session's CSRF token, compared in constant time; its message says the
 * session is still open, so that a page tells it from a session that ended.
 */
function requireCsrfToken(header: string | string[] | undefined, csrfToken: string): void {
  const given = Buffer.from(typeof header === 'string' ? header : '')
  const expected = Buffer.from(csrfToken)
  if (given.length === expected.length && timingSafeEqual(given, expected)) return
  const what =
    header === undefined
      ? 'this POST has no x-csrf-token header'
      : "this POST's x-csrf-token header is not this session's CSRF token"
  throw new ApiError(
    ResponseCode.UNAUTHORIZED,
    `${what}; the session itself is still open: send the csrfToken that GET /portal/api/session answers for this session's cookie as x-csrf-token with every POST`,
  )
}

/** The session as the audit trail names it. */
export function sessionActor(session: Pick<PortalSession, 'sessionId' | 'enterpriseId'>): Actor {
  return {
    kind: 'partner',
    id: `portal-session ${session.sessionId}`,
    name: `enterprise ${session.enterpriseId} (portal)`,
  }
}

/** Refuses (4031, a refused row in the trail) an action the session's access does not reach. */
export async function requireAccess(
  context: PlatformContext,
  request: FastifyRequest,
  session: PortalSession,
  action: Pick<SelfServiceAction, 'access' | 'contract'>,
): Promise<void> {
  if (action.access === 'view') return
  if (session.access === 'manage' && !session.operatorView) return
  await appendAudit(context.db, {
    at: new Date(context.clock()).toISOString(),
    actor: sessionActor(session),
    operation: action.contract.operationId,
    target: { enterpriseId: session.enterpriseId },
    before: null,
    after: null,
    ...sourceOf(request),
    outcome: 'refused',
  })
  throw new ApiError(
    ResponseCode.FORBIDDEN_BY_ROLE,
    session.operatorView
      ? "this is an operator's read-only view of the portal: it changes nothing; the partner's own manage session can"
      : 'this portal session can view only: ask for a manage link (from your operator, or POST /openapi/v1/portal/link with {"access": "manage"})',
  )
}
