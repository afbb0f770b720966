import type { Database, Queryable } from '../storage/database.js'
import type { Principal } from './principal.js'
import type { Role } from './roles.js'
import { digestOf, newSecret } from './secrets.js'

/** An API key as listed: never the key itself, which is shown once, at creation. */
export interface ApiKeySummary {
  keyId: number
  name: string
  role: Role
  enterprises: number[] | null
  createdBy: string
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
  revokedAt: string | null
}

export interface NewApiKey {
  name: string
  role: Role
  enterprises: number[] | null
  expiresAt: string | null
  createdBy: string
}

export const KEY_PREFIX = 'esk_'

export async function createApiKey(
  db: Database,
  key: NewApiKey,
  randomBytes: (size: number) => Buffer,
): Promise<{
  keyId: number
  key: string
  role: Role
  enterprises: number[] | null
  expiresAt: string | null
}> {
  const secret = newSecret(randomBytes, KEY_PREFIX)
  const row = await db.transaction(async (tx) => {
    const [created] = await tx.query<{ keyId: number }>(
      `INSERT INTO api_keys (key_hash, name, role, enterprises, expires_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING key_id AS "keyId"`,
      [digestOf(secret), key.name, key.role, key.enterprises, key.expiresAt, key.createdBy],
    )
    return created
  })
  if (!row) throw new Error('the key was not stored')
  return {
    keyId: row.keyId,
    key: secret,
    role: key.role,
    enterprises: key.enterprises,
    expiresAt: key.expiresAt,
  }
}

const SUMMARY = `key_id AS "keyId", name, role, enterprises, created_by AS "createdBy", created_at AS "createdAt",
  expires_at AS "expiresAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt"`

export async function listApiKeys(db: Queryable): Promise<ApiKeySummary[]> {
  const rows = await db.query<ApiKeySummary>(`SELECT ${SUMMARY} FROM api_keys ORDER BY key_id`)
  return rows.map(withIsoTimes)
}

/** Revokes a key: refused from the next request on, on every instance (keys are looked up per request). */
export async function revokeApiKey(db: Database, keyId: number): Promise<ApiKeySummary | undefined> {
  const [row] = await db.transaction((tx) =>
    tx.query<ApiKeySummary>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE key_id = $1 RETURNING ${SUMMARY}`,
      [keyId],
    ),
  )
  return row && withIsoTimes(row)
}

/**
 * The principal a key stands for; 'refused' for a revoked or expired one, undefined for one unknown. Its
 * last use is recorded at most once a minute.
 */
export async function keyPrincipal(
  db: Queryable,
  key: string,
  now: number,
): Promise<Principal | 'refused' | undefined> {
  const [row] = await db.query<{
    keyId: number
    name: string
    role: Role
    enterprises: number[] | null
    expiresAt: Date | string | null
    revokedAt: Date | string | null
    lastUsedAt: Date | string | null
  }>(
    `SELECT key_id AS "keyId", name, role, enterprises, expires_at AS "expiresAt", revoked_at AS "revokedAt",
       last_used_at AS "lastUsedAt" FROM api_keys WHERE key_hash = $1`,
    [digestOf(key)],
  )
  if (!row) return undefined
  if (row.revokedAt !== null || (row.expiresAt !== null && new Date(row.expiresAt).getTime() <= now))
    return 'refused'
  if (row.lastUsedAt === null || new Date(row.lastUsedAt).getTime() < now - 60_000) {
    await db.query('UPDATE api_keys SET last_used_at = $2 WHERE key_id = $1', [
      row.keyId,
      new Date(now).toISOString(),
    ])
  }
  return {
    actor: { kind: 'key', id: `key:${row.keyId}`, name: row.name },
    role: row.role,
    enterprises: row.enterprises?.map(Number) ?? null,
  }
}

function withIsoTimes(row: ApiKeySummary): ApiKeySummary {
  const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString())
  return {
    ...row,
    enterprises: row.enterprises?.map(Number) ?? null,
    createdAt: iso(row.createdAt) as string,
    expiresAt: iso(row.expiresAt),
    lastUsedAt: iso(row.lastUsedAt),
    revokedAt: iso(row.revokedAt),
  }
}
