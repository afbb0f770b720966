import { createHash, timingSafeEqual } from 'node:crypto'
import { ResponseCode } from '@earshot/protocol'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { KEY_PREFIX, keyPrincipal } from '../access/api-keys.js'
import { BREAK_GLASS, type Principal, principalOf, sees, setPrincipal } from '../access/principal.js'
import { allows, grants } from '../access/roles.js'
import { type SessionLifetimes, sessionPrincipal, sessionToken } from '../access/sessions.js'
import { auditFields, sourceOf, targetOf } from '../audit/audit-entry.js'
import { appendAudit } from '../audit/audit-trail.js'
import { type PendingAudit, runAudited } from '../audit/audited-changes.js'
import { deliveryEnterprise, noSuchDelivery } from '../deliveries/delivery-owner.js'
import { noSuchEnterprise } from '../enterprises/enterprise-params.js'
import { positiveInteger } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { bearerCredentials } from '../http/bearer.js'
import type { Permission } from '../http/permissions.js'
import type { RouteSpec } from '../http/route-spec.js'
import type { Database } from '../storage/database.js'

/** What the admin listener's access control reads of the running platform. */
export interface AccessContext {
  db: Database
  clock: () => number
  /** The break-glass owner key, when EARSHOT_ADMIN_TOKEN is set. */
  breakGlassToken: string | undefined
  sessions: SessionLifetimes
}

/** Tags whose changes keep their fields' values in the trail; every other keeps only the fields' names. */
const SETTINGS_TAGS = new Set(['enterprises', 'endpoints', 'access', 'media', 'portal'])

const changes = new WeakMap<FastifyRequest, PendingAudit>()
const scopeTargets = new WeakMap<FastifyRequest, { enterpriseId?: number }>()

/**
 * Who may call each admin route, decided before it runs: the caller is authenticated (an API key, the
 * break-glass key, or a console session with its CSRF token on a change), its role must grant the route's
 * permission (4031 naming it, a refused row in the trail), and an enterprise outside its scope is unknown
 * (4040). A change then runs with its audit row pending: its first write appends the row, in its transaction.
 */
export function guardAdminRoutes(
  app: FastifyInstance,
  routes: readonly RouteSpec<unknown>[],
  access: AccessContext,
) {
  const byRoute = new Map(routes.map((route) => [`${route.method} ${route.path}`, route]))
  const routeOf = (request: FastifyRequest) =>
    byRoute.get(
      `${request.routeOptions.method === 'HEAD' ? 'GET' : request.routeOptions.method} ${request.routeOptions.url}`,
    )
  const breakGlass = access.breakGlassToken === undefined ? undefined : digest(access.breakGlassToken)

  app.addHook('onRequest', async (request) => {
    const route = routeOf(request)
    if (route?.open) {
      // Open routes (sign-in, setup, the session) serve anyone, and see who it is when they can.
      const principal = await authenticate(request, access, breakGlass).catch(() => undefined)
      if (principal) setPrincipal(request, principal)
      return
    }
    if (route === undefined && isPublicPath(request.url)) return
    const principal = await authenticate(request, access, breakGlass)
    setPrincipal(request, principal)
    if (route === undefined) return
    const permission = route.permission as Permission
    if (!allows(principal.role, principal.enterprises !== null, permission)) {
      await appendAudit(access.db, refusedRow(request, route, principal, access.clock))
      throw new ApiError(ResponseCode.FORBIDDEN_BY_ROLE, refusalMessage(principal, permission))
    }
    scopeTargets.set(request, await requireScope(request, principal, access.db))
  })

  app.addHook('preHandler', async (request) => {
    const route = routeOf(request)
    if (route === undefined || route.open) return
    const principal = principalOf(request)
    const target = scopeTargets.get(request) ?? {}
    if (route.method === 'GET' && principal.actor.kind !== 'break-glass') return
    changes.set(request, {
      actor: principal.actor,
      operation: route.operationId,
      ...sourceOf(request),
      target: { ...targetOf(request.params), ...target },
      before: null,
      after: auditFields(request.body, SETTINGS_TAGS.has(route.tag)),
      appended: 0,
      closed: false,
    })
  })

  // A change that committed no transaction of its own (a check that stored nothing, a read by the
  // break-glass key) still gets its row, once it has answered.
  app.addHook('onResponse', async (request, reply) => {
    const change = changes.get(request)
    if (!change) return
    change.closed = true
    if (change.appended > 0 || reply.statusCode >= 400) return
    await appendAudit(access.db, { ...change, at: new Date(access.clock()).toISOString(), outcome: 'ok' })
  })
}

/** Runs a guarded route's handler with its change pending, so that its transactions append the change's row. */
export function auditedHandler<Env>(route: RouteSpec<Env>): RouteSpec<Env> {
  return {
    ...route,
    handle(env) {
      const handler = route.handle(env)
      return (request, reply) => {
        const change = changes.get(request)
        return change ? runAudited(change, () => handler(request, reply)) : handler(request, reply)
      }
    },
  }
}

async function authenticate(
  request: FastifyRequest,
  access: AccessContext,
  breakGlass: Buffer | undefined,
): Promise<Principal> {
  const given = bearerCredentials(request.headers.authorization)
  const now = access.clock()
  if (given?.startsWith(KEY_PREFIX)) {
    const principal = await keyPrincipal(access.db, given, now)
    if (principal === 'refused')
      throw unauthorized('the API key was revoked or has expired: ask an owner for a new one')
    if (principal) return principal
  } else if (given !== undefined) {
    if (breakGlass && timingSafeEqual(digest(given), breakGlass)) return BREAK_GLASS
  } else {
    const token = sessionToken(request.headers.cookie)
    const principal = token && (await sessionPrincipal(access.db, token, now, access.sessions))
    if (principal) {
      const method = request.method
      if (method !== 'GET' && method !== 'HEAD' && request.headers['x-csrf-token'] !== principal.csrfToken) {
        throw unauthorized("a change made in a console session must carry the session's x-csrf-token header")
      }
      return principal
    }
    if (token) throw unauthorized('the console session has ended or expired: sign in again')
  }
  throw unauthorized(
    'the admin API needs "Authorization: Bearer <API key>" (earshot keys create; EARSHOT_API_KEY for the CLI), ' +
      'the break-glass EARSHOT_ADMIN_TOKEN, or a console session',
  )
}

/**
 * Refuses with 4040, as if it did not exist, an enterprise (or a delivery of one) outside the principal's
 * scope; answers the enterprise a delivery belongs to, for the trail.
 */
async function requireScope(
  request: FastifyRequest,
  principal: Principal,
  db: Database,
): Promise<{ enterpriseId?: number }> {
  const params = (request.params ?? {}) as Record<string, string>
  const enterpriseId = positiveInteger(params.enterpriseId)
  if (enterpriseId !== undefined && !sees(principal, enterpriseId)) throw noSuchEnterprise(enterpriseId)
  const deliveryId = positiveInteger(params.deliveryId)
  if (deliveryId === undefined) return {}
  const owner = await deliveryEnterprise(db, deliveryId)
  if (owner !== undefined && !sees(principal, owner)) throw noSuchDelivery(deliveryId)
  return owner === undefined ? {} : { enterpriseId: owner }
}

function refusedRow(
  request: FastifyRequest,
  route: RouteSpec<unknown>,
  principal: Principal,
  clock: () => number,
) {
  return {
    at: new Date(clock()).toISOString(),
    actor: principal.actor,
    operation: route.operationId,
    target: targetOf(request.params),
    before: null,
    after: null,
    ...sourceOf(request),
    outcome: 'refused' as const,
  }
}

function refusalMessage(principal: Principal, permission: Permission): string {
  if (grants(principal.role, permission)) {
    return `${permission} covers the whole platform, and this ${principal.actor.kind} is limited to enterprises ${principal.enterprises?.join(', ')}: ask an owner`
  }
  return `the ${principal.role} role does not grant ${permission}: ask an owner for a role that does`
}

function unauthorized(message: string): ApiError {
  // Closing the connection stops a client without a credential from holding it for the admin timeout.
  return new ApiError(ResponseCode.UNAUTHORIZED, message, { connection: 'close' })
}

/**
 * What the admin listener serves to anyone: the health probe, the API's description and the console's
 * pages and assets (the console signs in, then calls the API with its session).
 */
const PUBLIC_PATHS = ['/healthz', '/openapi.json']
const PUBLIC_PREFIXES = ['/docs', '/console']

export function isPublicPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? ''
  return (
    PUBLIC_PATHS.includes(path) ||
    PUBLIC_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  )
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}
