/** Who acts, as the audit trail names them. */
export type ActorKind = 'operator' | 'key' | 'partner' | 'platform' | 'break-glass'

export interface Actor {
  kind: ActorKind
  id: string
  name: string
}

export type AuditOutcome = 'ok' | 'refused'

/** The ids an audit row's change concerns. */
export const TARGET_KEYS = [
  'enterpriseId',
  'audioId',
  'endpointId',
  'deliveryId',
  'keyId',
  'operatorId',
] as const
export type AuditTarget = Partial<Record<(typeof TARGET_KEYS)[number], string | number>>

/** One row of the audit trail, as `earshot audit list` shows it. */
export interface AuditRow {
  seq: number
  /** ISO 8601, milliseconds. */
  at: string
  actor: Actor
  operation: string
  target: AuditTarget
  before: Record<string, unknown> | null
  after: Record<string, unknown> | null
  address: string | null
  userAgent: string | null
  outcome: AuditOutcome
  prevHash: string
  hash: string
}

/** Fields that never enter the trail, whatever the operation. */
const SECRET_FIELD = /secret|password|token|^key$|apikey|authorization|cookie/i

/**
 * A request body's fields as the trail keeps them: their values (secrets left out) for the settings of
 * enterprises, endpoints, keys and operators; only the names of the fields for a recording's, so that
 * no recording content ever enters the trail.
 */
export function auditFields(body: unknown, withValues: boolean): Record<string, unknown> | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null
  const fields = Object.entries(body as Record<string, unknown>).filter(([name]) => !SECRET_FIELD.test(name))
  if (fields.length === 0) return null
  return withValues ? Object.fromEntries(fields) : { fields: fields.map(([name]) => name).sort() }
}

/** The ids among a value's own fields (a route's params, what a change's transaction returned). */
export function targetOf(value: unknown): AuditTarget {
  const target: AuditTarget = {}
  if (value === null || typeof value !== 'object') return target
  for (const key of TARGET_KEYS) {
    const id = (value as Record<string, unknown>)[key]
    // Path parameters arrive as text: numeric ids are kept as the numbers the routes answer.
    if (typeof id === 'string' && key !== 'audioId' && /^\d{1,15}$/.test(id)) target[key] = Number(id)
    else if (typeof id === 'number' || typeof id === 'string') target[key] = id
  }
  return target
}

/** Where a request came from, as a row keeps it: its client address and its user agent (cut at 200). */
export function sourceOf(request: { ip: string; headers: { 'user-agent'?: string | undefined } }): {
  address: string
  userAgent: string | null
} {
  return { address: request.ip, userAgent: request.headers['user-agent']?.slice(0, 200) ?? null }
}
