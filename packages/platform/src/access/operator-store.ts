import type { Database, Queryable } from '../storage/database.js'
import { hashPassword } from './passwords.js'
import type { Role } from './roles.js'
import { digestOf, newSecret } from './secrets.js'

export interface OperatorSummary {
  operatorId: number
  email: string
  name: string
  role: Role
  enterprises: number[] | null
  enabled: boolean
  /** Whether the operator has a way to sign in yet (a password, or a single sign-on done). */
  setUp: boolean
  sso: boolean
  createdAt: string
}

export interface OperatorChanges {
  name?: string
  role?: Role
  enterprises?: number[] | null
  enabled?: boolean
}

/** Seconds an added operator's setup link stays valid; the first owner's is minted again at every start. */
const SETUP_LINK_SECONDS = 7 * 86_400
const FIRST_OWNER_LINK_SECONDS = 86_400

const SUMMARY = `operator_id AS "operatorId", email, name, role, enterprises, enabled,
  set_up_at IS NOT NULL AS "setUp", sso_subject IS NOT NULL AS sso, created_at AS "createdAt"`

export async function listOperators(db: Queryable): Promise<OperatorSummary[]> {
  return (await db.query<OperatorSummary>(`SELECT ${SUMMARY} FROM operators ORDER BY operator_id`)).map(
    asSummary,
  )
}

async function getOperator(db: Queryable, operatorId: number): Promise<OperatorSummary | undefined> {
  const [row] = await db.query<OperatorSummary>(`SELECT ${SUMMARY} FROM operators WHERE operator_id = $1`, [
    operatorId,
  ])
  return row && asSummary(row)
}

/** Adds an operator with a one-time setup link's token; undefined when the email is taken. */
export async function addOperator(
  db: Database,
  operator: { email: string; name: string; role: Role; enterprises: number[] | null },
  now: number,
  randomBytes: (size: number) => Buffer,
): Promise<{ operatorId: number; setupToken: string } | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await tx.query<{ operatorId: number }>(
      `INSERT INTO operators (email, name, role, enterprises) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING operator_id AS "operatorId"`,
      [operator.email, operator.name, operator.role, operator.enterprises],
    )
    if (!row) return undefined
    const setupToken = await mintSetupToken(tx, row.operatorId, now, SETUP_LINK_SECONDS, randomBytes)
    return { operatorId: row.operatorId, setupToken }
  })
}

/**
 * Changes an operator; disabling one ends its sessions in the same transaction. Refused (undefined with a
 * reason) when it would leave no enabled owner who can sign in.
 */
export async function updateOperator(
  db: Database,
  operatorId: number,
  changes: OperatorChanges,
): Promise<{ before: OperatorSummary; after: OperatorSummary } | 'unknown' | 'last-owner'> {
  return db
    .transaction(async (tx) => {
      // Every change of an owner takes this lock first, so two demotions cannot each leave the other owner.
      await tx.query('LOCK TABLE operators IN SHARE ROW EXCLUSIVE MODE')
      const before = await getOperator(tx, operatorId)
      if (!before) return 'unknown'
      const [row] = await tx.query<OperatorSummary>(
        `UPDATE operators SET name = COALESCE($2, name), role = COALESCE($3, role),
         enterprises = CASE WHEN $4 THEN $5::bigint[] ELSE enterprises END, enabled = COALESCE($6, enabled)
       WHERE operator_id = $1 RETURNING ${SUMMARY}`,
        [
          operatorId,
          changes.name ?? null,
          changes.role ?? null,
          changes.enterprises !== undefined,
          changes.enterprises ?? null,
          changes.enabled ?? null,
        ],
      )
      const [owners] = await tx.query<{ count: number }>(
        "SELECT count(*)::int AS count FROM operators WHERE role = 'owner' AND enabled AND set_up_at IS NOT NULL",
      )
      if (before.role === 'owner' && before.enabled && before.setUp && (owners?.count ?? 0) === 0) {
        throw new LastOwner()
      }
      if (changes.enabled === false) {
        await tx.query(
          'UPDATE operator_sessions SET ended_at = now() WHERE operator_id = $1 AND ended_at IS NULL',
          [operatorId],
        )
      }
      return { before, after: asSummary(row as OperatorSummary) }
    })
    .catch((error: unknown) => {
      if (error instanceof LastOwner) return 'last-owner' as const
      throw error
    })
}

class LastOwner extends Error {}

/** Whether an owner can sign in: until then, every start prints a setup link for the first one. */
export async function ownerExists(db: Queryable): Promise<boolean> {
  const [row] = await db.query<{ exists: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM operators WHERE role = 'owner' AND enabled AND set_up_at IS NOT NULL) AS exists",
  )
  return row?.exists === true
}

/** A setup link's token for the first owner, or undefined once an owner exists. */
export async function mintFirstOwnerToken(
  db: Database,
  now: number,
  randomBytes: (size: number) => Buffer,
): Promise<string | undefined> {
  if (await ownerExists(db)) return undefined
  return db.transaction((tx) => mintSetupToken(tx, null, now, FIRST_OWNER_LINK_SECONDS, randomBytes))
}

async function mintSetupToken(
  tx: Queryable,
  operatorId: number | null,
  now: number,
  seconds: number,
  randomBytes: (size: number) => Buffer,
): Promise<string> {
  const token = newSecret(randomBytes)
  await tx.query(
    'INSERT INTO operator_setup_tokens (token_hash, operator_id, expires_at) VALUES ($1, $2, $3)',
    [digestOf(token), operatorId, new Date(now + seconds * 1000).toISOString()],
  )
  return token
}

export type SetupRefusal = 'unknown' | 'spent' | 'expired' | 'owner-exists' | 'email-needed' | 'email-taken'

/**
 * Completes a setup link: sets the operator's password (for the first owner's link, creates the owner).
 * The link is spent in the same transaction; a first owner's link is refused once an owner exists.
 */
export async function completeSetup(
  tx: Queryable,
  token: string,
  details: { email?: string; name?: string; password: string },
  now: number,
): Promise<number | SetupRefusal> {
  await tx.query('LOCK TABLE operators IN SHARE ROW EXCLUSIVE MODE')
  const [link] = await tx.query<{ operatorId: number | null; expiresAt: Date | string; usedAt: unknown }>(
    `SELECT operator_id AS "operatorId", expires_at AS "expiresAt", used_at AS "usedAt"
     FROM operator_setup_tokens WHERE token_hash = $1 FOR UPDATE`,
    [digestOf(token)],
  )
  if (!link) return 'unknown'
  if (link.usedAt !== null) return 'spent'
  if (new Date(link.expiresAt).getTime() <= now) return 'expired'
  const passwordHash = await hashPassword(details.password)
  let operatorId = link.operatorId
  if (operatorId === null) {
    if (await ownerExists(tx)) return 'owner-exists'
    if (!details.email) return 'email-needed'
    const [created] = await tx.query<{ operatorId: number }>(
      `INSERT INTO operators (email, name, role, password_hash, set_up_at) VALUES ($1, $2, 'owner', $3, $4)
       ON CONFLICT DO NOTHING RETURNING operator_id AS "operatorId"`,
      [details.email, details.name ?? '', passwordHash, new Date(now).toISOString()],
    )
    if (!created) return 'email-taken'
    operatorId = created.operatorId
  } else {
    await tx.query(
      `UPDATE operators SET password_hash = $2, set_up_at = COALESCE(set_up_at, $3), name = COALESCE($4, name)
       WHERE operator_id = $1`,
      [operatorId, passwordHash, new Date(now).toISOString(), details.name ?? null],
    )
  }
  await tx.query('UPDATE operator_setup_tokens SET used_at = $2 WHERE token_hash = $1', [
    digestOf(token),
    new Date(now).toISOString(),
  ])
  return operatorId
}

function asSummary(row: OperatorSummary): OperatorSummary {
  return {
    ...row,
    enterprises: row.enterprises?.map(Number) ?? null,
    createdAt: new Date(row.createdAt).toISOString(),
  }
}

/** The first owner's setup link, at the console, while no owner can sign in. */
export async function firstOwnerSetupUrl(
  db: Database,
  adminUrl: string,
  clock: () => number,
  randomBytes: (size: number) => Buffer,
): Promise<string | undefined> {
  const token = await mintFirstOwnerToken(db, clock(), randomBytes)
  return token === undefined ? undefined : setupUrl(adminUrl, token)
}

/** A setup link: the console's setup page, the token in the fragment so that no log or proxy sees it. */
export function setupUrl(adminUrl: string, token: string): string {
  return `${adminUrl.replace(/\/$/, '')}/console/#setup=${token}`
}
