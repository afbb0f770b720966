import type { Queryable } from '../storage/database.js'
import { ROLE_NAMES, type Role } from './roles.js'
import { type SsoIdentity, SsoRefusal, type SsoSettings, subjectPrefix } from './sso-client.js'

/** The operator a single sign-on signs in as, and how it came to be theirs on a first sign-in. */
export interface SsoOperator {
  operatorId: number
  name: string
  firstSignIn?: { by: 'email' } | { by: 'claim'; role: Role; enterprises: number[] | null }
}

const ASK_AN_OWNER = 'ask an owner to add you'

/**
 * Who a verified identity signs in as, in the sign-in's transaction: the operator this provider account
 * signed in as before; else an enabled operator whose email is the account's verified email, not yet
 * linked to an account of this provider (its account is linked now, and counts as set up); else, when the
 * role claim is configured and names a role, a new operator with that role (and the enterprises of the
 * scope claim). Anything else is refused, with the operator's id when there is one.
 */
export async function ssoOperator(
  tx: Queryable,
  identity: SsoIdentity,
  settings: SsoSettings,
  now: number,
): Promise<SsoOperator> {
  const [linked] = await tx.query<{ operatorId: number; name: string; enabled: boolean }>(
    `SELECT operator_id AS "operatorId", COALESCE(NULLIF(name, ''), email) AS name, enabled
     FROM operators WHERE sso_subject = $1`,
    [identity.subject],
  )
  if (linked) {
    if (!linked.enabled) throw disabled(linked.operatorId)
    return { operatorId: linked.operatorId, name: linked.name }
  }
  // Linking or creating an operator takes the lock every change of the operators' roles takes.
  await tx.query('LOCK TABLE operators IN SHARE ROW EXCLUSIVE MODE')
  const byEmail = identity.email === undefined ? undefined : await linkByEmail(tx, identity, settings, now)
  if (byEmail) return byEmail
  const role = roleOf(identity.claims, settings.roleClaim)
  if (role === undefined) {
    throw new SsoRefusal(
      `no operator account for you here: ${ASK_AN_OWNER}`,
      identity.email === undefined
        ? 'no operator is linked to this account, and the provider gave no verified email'
        : 'no operator has this verified email',
    )
  }
  return createOperator(tx, identity, role, settings, now)
}

async function linkByEmail(
  tx: Queryable,
  identity: SsoIdentity,
  settings: SsoSettings,
  now: number,
): Promise<SsoOperator | undefined> {
  const [operator] = await tx.query<{ operatorId: number; name: string; enabled: boolean; linked: boolean }>(
    `SELECT operator_id AS "operatorId", COALESCE(NULLIF(name, ''), email) AS name, enabled,
       left(sso_subject, length($2)) = $2 AS linked
     FROM operators WHERE lower(email) = lower($1)`,
    [identity.email, subjectPrefix(settings.issuer)],
  )
  if (!operator) return undefined
  if (!operator.enabled) throw disabled(operator.operatorId)
  if (operator.linked) {
    throw new SsoRefusal(
      `your email belongs to an operator who signs in with another account: ${ASK_AN_OWNER}`,
      'the operator with this email is linked to another account of this provider',
      operator.operatorId,
    )
  }
  const at = new Date(now).toISOString()
  await tx.query(
    `UPDATE operators SET sso_subject = $2, set_up_at = COALESCE(set_up_at, $3),
       name = CASE WHEN name = '' THEN $4 ELSE name END
     WHERE operator_id = $1`,
    [operator.operatorId, identity.subject, at, identity.name],
  )
  // Set up now: the setup link the owner was given for them opens nothing any more.
  await tx.query('UPDATE operator_setup_tokens SET used_at = $2 WHERE operator_id = $1 AND used_at IS NULL', [
    operator.operatorId,
    at,
  ])
  return {
    operatorId: operator.operatorId,
    name: identity.name || operator.name,
    firstSignIn: { by: 'email' },
  }
}

async function createOperator(
  tx: Queryable,
  identity: SsoIdentity,
  role: Role,
  settings: SsoSettings,
  now: number,
): Promise<SsoOperator> {
  if (identity.email === undefined) {
    throw new SsoRefusal(
      `the identity provider gave no verified email: ${ASK_AN_OWNER}`,
      `the ${settings.roleClaim} claim names a role, but the provider gave no verified email`,
    )
  }
  const enterprises = settings.scopeClaim === undefined ? null : scopeOf(identity.claims, settings.scopeClaim)
  if (enterprises === undefined) {
    throw new SsoRefusal(
      `your account does not say which enterprises you may see: ${ASK_AN_OWNER}`,
      `the ${settings.scopeClaim} claim is missing or is not a list of enterprise ids (or "*")`,
    )
  }
  const [created] = await tx.query<{ operatorId: number }>(
    `INSERT INTO operators (email, name, role, enterprises, sso_subject, set_up_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING operator_id AS "operatorId"`,
    [identity.email, identity.name, role, enterprises, identity.subject, new Date(now).toISOString()],
  )
  if (!created) {
    throw new SsoRefusal(
      `an operator with your email exists but cannot sign in this way: ${ASK_AN_OWNER}`,
      'an operator with this email exists',
    )
  }
  return {
    operatorId: created.operatorId,
    name: identity.name || identity.email,
    firstSignIn: { by: 'claim', role, enterprises },
  }
}

/** The role a claim names: its value must be a role's name. */
function roleOf(claims: Readonly<Record<string, unknown>>, claim: string | undefined): Role | undefined {
  const value = claim === undefined ? undefined : claims[claim]
  return ROLE_NAMES.find((role) => role === value)
}

/**
 * The enterprises a scope claim limits an operator to: a list of ids (numbers, or digits as text), or "*"
 * for every one (null); undefined when it is neither.
 */
function scopeOf(claims: Readonly<Record<string, unknown>>, claim: string): number[] | null | undefined {
  const value = claims[claim]
  if (value === '*') return null
  if (!Array.isArray(value) || value.length > 1000) return undefined
  const ids = value.map((id) => (typeof id === 'string' && /^\d{1,15}$/.test(id) ? Number(id) : id))
  return ids.every((id) => Number.isSafeInteger(id) && id > 0) ? [...new Set(ids as number[])] : undefined
}

function disabled(operatorId: number): SsoRefusal {
  return new SsoRefusal(
    'your operator account is disabled: ask an owner',
    'the operator is disabled',
    operatorId,
  )
}
