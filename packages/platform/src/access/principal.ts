import type { Actor } from '../audit/audit-entry.js'
import type { Role } from './roles.js'

/**
 * A signed-in operator, an API key or the break-glass token, with what it may do: its role, and the
 * enterprises it is limited to (null: every one).
 */
export interface Principal {
  actor: Actor
  role: Role
  enterprises: readonly number[] | null
  /** The session's CSRF token, when signed in by a cookie: every change must carry it. */
  csrfToken?: string
  operatorId?: number
  sessionHash?: Buffer
}

export const BREAK_GLASS: Principal = {
  actor: { kind: 'break-glass', id: 'break-glass', name: 'EARSHOT_ADMIN_TOKEN' },
  role: 'owner',
  enterprises: null,
}

/** Whether the principal may see this enterprise: outside its scope an enterprise looks unknown. */
export function sees(principal: Principal, enterpriseId: number): boolean {
  return principal.enterprises === null || principal.enterprises.includes(enterpriseId)
}

const principals = new WeakMap<object, Principal>()

/** Attaches the principal the admin listener authenticated to its request. */
export function setPrincipal(request: object, principal: Principal): void {
  principals.set(request, principal)
}

/**
 * Who makes this admin request. Every admin route but the open ones runs after authentication, so a route
 * reading it where none was set is a programming error.
 */
export function principalOf(request: object): Principal {
  const principal = principals.get(request)
  if (!principal) throw new Error('no principal: the route is open, or the request was not authenticated')
  return principal
}

/** Who makes this request, if anyone could be told (an open route's caller may be no one). */
export function maybePrincipalOf(request: object): Principal | undefined {
  return principals.get(request)
}

/** The enterprises a request may see (null: every one), for a list to filter by. */
export function scopeOf(request: object): readonly number[] | null {
  return principals.get(request)?.enterprises ?? null
}

/** The rows of a list a request may see: those of the enterprises in its scope. */
export function seen<Row extends { enterpriseId: number }>(
  rows: Row[],
  scope: readonly number[] | null,
): Row[] {
  return scope === null ? rows : rows.filter((row) => scope.includes(row.enterpriseId))
}
