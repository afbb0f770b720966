import { type Permission, permissions } from '../http/permissions.js'

/**
 * The one place permissions are decided: what each role grants. An owner holds everything; an admin all
 * but operators and keys; an operator changes recordings, deliveries and endpoints but never sees a
 * secret; a viewer reads, never a secret. A manage link into the portal may rotate the enterprise's key
 * and be shown the new secret, so minting portal links is an admin's, as rotating a key is.
 */
const every = Object.keys(permissions) as Permission[]
const reads: Permission[] = [
  'enterprises.read',
  'recordings.read',
  'deliveries.read',
  'endpoints.read',
  'operations.read',
  'portal.view',
  'erasures.read',
]

export const roles = {
  owner: every,
  admin: every.filter((permission) => permission !== 'operators.manage' && permission !== 'keys.manage'),
  operator: [...reads, 'recordings.write', 'deliveries.replay', 'endpoints.write'],
  viewer: reads,
} as const satisfies Record<string, readonly Permission[]>

export type Role = keyof typeof roles
export const ROLE_NAMES = Object.keys(roles) as Role[]

export function grants(role: Role, permission: Permission): boolean {
  return (roles[role] as readonly Permission[]).includes(permission)
}

/**
 * Permissions over the whole platform rather than an enterprise: a role limited to some enterprises never
 * holds them (it would see others' figures, or mint itself a wider key).
 */
export const PLATFORM_WIDE: readonly Permission[] = [
  'enterprises.create',
  'operations.read',
  'media.write',
  'operators.manage',
  'keys.manage',
]

/** What a role limited to some enterprises (or not) may do. */
export function allows(role: Role, limited: boolean, permission: Permission): boolean {
  return grants(role, permission) && !(limited && PLATFORM_WIDE.includes(permission))
}
