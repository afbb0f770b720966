import { generateSecret } from '@earshot/protocol'
import { noteAudit } from '../audit/audited-changes.js'
import type { Database, Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'

export interface EnterpriseCredentials {
  enterpriseId: number
  keyVersion: number
  /** Shown once, when created; the platform keeps it to open and seal envelopes. */
  secret: string
}

export interface EnterpriseKeySummary {
  keyVersion: number
  createdAt: string
  /** When the key stops being accepted; null for the current key. */
  retiresAt: string | null
}

export interface EnterpriseSummary {
  enterpriseId: number
  name: string
  /** Its first endpoint's URL (the one `set-push-url` sets), if it has one. */
  pushUrl: string | null
  disabled: boolean
  /** Its sealed requests must carry issuedAt; 4001 otherwise. */
  requireIssuedAt: boolean
  /** Recordings are erased this many days after their recordedAt; null keeps them. */
  retentionDays: number | null
  createdAt: string
  keys: EnterpriseKeySummary[]
}

/** What `earshot enterprise update` changes; a field left out stays as it is. */
export interface EnterpriseChanges {
  requireIssuedAt?: boolean | undefined
  /** 0 removes the policy. */
  retentionDays?: number | undefined
}

export interface RotatedKey extends EnterpriseCredentials {
  previousKeyVersion: number
  previousKeyRetiresAt: string
}

type RandomBytes = (size: number) => Buffer

/**
 * Gives a new enterprise its first push endpoint, in the transaction that creates it. A port: the endpoints
 * slice owns that table and implements it (endpoints/endpoint-store.ts); the platform hands it in.
 */
export type FirstEndpoint = (tx: Queryable, enterpriseId: number, url: string) => Promise<void>

export async function createEnterprise(
  db: Database,
  name: string,
  first: { pushUrl: string; addEndpoint: FirstEndpoint } | null,
  randomBytes?: RandomBytes,
): Promise<EnterpriseCredentials> {
  const secret = generateSecret(randomBytes)
  return db.transaction(async (tx) => {
    const [row] = await tx.query<{ enterpriseId: number }>(
      'INSERT INTO enterprises (name) VALUES ($1) RETURNING enterprise_id AS "enterpriseId"',
      [name],
    )
    const enterpriseId = (row as { enterpriseId: number }).enterpriseId
    if (first) await first.addEndpoint(tx, enterpriseId, first.pushUrl)
    await tx.query('INSERT INTO enterprise_keys (enterprise_id, key_version, secret) VALUES ($1, 1, $2)', [
      enterpriseId,
      secret,
    ])
    return { enterpriseId, keyVersion: 1, secret }
  })
}

/** Every enterprise, by id; or only the one given. */
export async function listEnterprises(db: Queryable, only?: number): Promise<EnterpriseSummary[]> {
  const rows = await db.query<EnterpriseSummary & { keys: EnterpriseKeySummary[] | string }>(
    `SELECT e.enterprise_id AS "enterpriseId", e.name,
            (SELECT url FROM endpoints WHERE enterprise_id = e.enterprise_id AND removed_at IS NULL
              ORDER BY endpoint_id LIMIT 1) AS "pushUrl",
            e.disabled_at IS NOT NULL AS disabled, e.require_issued_at AS "requireIssuedAt",
            e.retention_days AS "retentionDays", ${isoTime('e.created_at')} AS "createdAt",
            (SELECT json_agg(json_build_object('keyVersion', k.key_version, 'createdAt', ${isoTime('k.created_at')},
                                               'retiresAt', ${isoTime('k.retires_at')}) ORDER BY k.key_version)
               FROM enterprise_keys k WHERE k.enterprise_id = e.enterprise_id) AS keys
       FROM enterprises e WHERE $1::int8 IS NULL OR e.enterprise_id = $1 ORDER BY e.enterprise_id`,
    [only ?? null],
  )
  return rows.map((row) => ({ ...row, keys: typeof row.keys === 'string' ? JSON.parse(row.keys) : row.keys }))
}

export async function anyEnterprise(db: Queryable): Promise<boolean> {
  const [row] = await db.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM enterprises) AS any')
  return row?.any === true
}

export async function enterpriseExists(db: Queryable, enterpriseId: number): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM enterprises WHERE enterprise_id = $1', [enterpriseId])
  return rows.length === 1
}

/**
 * Disables an enterprise: its tokens stop working (on every instance within the credentials bound,
 * auth/credential-cache.ts). False when there is no such enterprise.
 */
export async function disableEnterprise(db: Database, enterpriseId: number): Promise<boolean> {
  const rows = await db.transaction((tx) =>
    tx.query(
      'UPDATE enterprises SET disabled_at = coalesce(disabled_at, now()) WHERE enterprise_id = $1 RETURNING 1',
      [enterpriseId],
    ),
  )
  return rows.length === 1
}

/**
 * Applies an operator's changes to an enterprise and answers it as it is now; undefined when there is no
 * such enterprise. The trigger on enterprises tells every instance's credentials cache (migration 21).
 */
export async function updateEnterprise(
  db: Database,
  enterpriseId: number,
  changes: EnterpriseChanges,
): Promise<EnterpriseSummary | undefined> {
  const rows = await db.transaction(async (tx) => {
    const [before] = await tx.query<{ requireIssuedAt: boolean; retentionDays: number | null }>(
      `SELECT require_issued_at AS "requireIssuedAt", retention_days AS "retentionDays"
         FROM enterprises WHERE enterprise_id = $1 FOR UPDATE`,
      [enterpriseId],
    )
    noteAudit({ before: before ?? null })
    // A policy set or changed is looked at now (erasures/retention.ts).
    return tx.query(
      `UPDATE enterprises SET require_issued_at = coalesce($2, require_issued_at),
              retention_days = CASE WHEN $3::int IS NULL THEN retention_days ELSE nullif($3::int, 0) END,
              retention_due_at = CASE WHEN nullif($3::int, 0) IS DISTINCT FROM retention_days AND $3::int IS NOT NULL
                                      THEN now() ELSE retention_due_at END
        WHERE enterprise_id = $1 RETURNING 1`,
      [enterpriseId, changes.requireIssuedAt ?? null, changes.retentionDays ?? null],
    )
  })
  if (rows.length === 0) return undefined
  return (await listEnterprises(db, enterpriseId))[0]
}

/** The key an enterprise's pushes are sealed with: its newest key version not set to retire. */
export async function currentKey(
  db: Queryable,
  enterpriseId: number,
): Promise<{ keyVersion: number; secret: string } | undefined> {
  const [key] = await db.query<{ keyVersion: number; secret: string }>(
    `SELECT key_version AS "keyVersion", secret FROM enterprise_keys
      WHERE enterprise_id = $1 AND retires_at IS NULL ORDER BY key_version DESC LIMIT 1`,
    [enterpriseId],
  )
  return key
}

/**
 * Issues the next keyVersion. The previous current key stays valid for the grace period from nowMs (the
 * platform's clock, which every request checks retirement against) and then retires, revoking the tokens
 * issued under it. Undefined when there is no such enterprise.
 */
export async function rotateKey(
  db: Database,
  enterpriseId: number,
  graceSeconds: number,
  nowMs: number,
  randomBytes?: RandomBytes,
): Promise<RotatedKey | undefined> {
  const secret = generateSecret(randomBytes)
  return db.transaction(async (tx) => {
    const locked = await tx.query('SELECT 1 FROM enterprises WHERE enterprise_id = $1 FOR NO KEY UPDATE', [
      enterpriseId,
    ])
    if (locked.length === 0) return undefined
    const [current] = await tx.query<{ keyVersion: number; retiresAt: string }>(
      `UPDATE enterprise_keys SET retires_at = to_timestamp($3::float8 / 1000) + make_interval(secs => $2)
        WHERE enterprise_id = $1 AND retires_at IS NULL
        RETURNING key_version AS "keyVersion", ${isoTime('retires_at')} AS "retiresAt"`,
      [enterpriseId, graceSeconds, nowMs],
    )
    const [next] = await tx.query<{ keyVersion: number }>(
      `INSERT INTO enterprise_keys (enterprise_id, key_version, secret)
       SELECT $1, coalesce(max(key_version), 0) + 1, $2 FROM enterprise_keys WHERE enterprise_id = $1
       RETURNING key_version AS "keyVersion"`,
      [enterpriseId, secret],
    )
    const keyVersion = (next as { keyVersion: number }).keyVersion
    return {
      enterpriseId,
      keyVersion,
      secret,
      previousKeyVersion: current?.keyVersion ?? keyVersion - 1,
      previousKeyRetiresAt: current?.retiresAt ?? new Date(nowMs).toISOString(),
    }
  })
}

/**
 * Takes the enterprise whose retention policy is due to be looked at, if any, and makes it due again in
 * RETENTION_RELOOK_MINUTES (one instance takes it: the others skip its locked row); answers it with the
 * cutoff its policy sets now.
 */
export async function takeDueRetention(
  db: Queryable,
): Promise<{ enterpriseId: number; cutoff: string } | undefined> {
  const [due] = await db.query<{ enterpriseId: number; cutoff: string }>(
    `UPDATE enterprises e SET retention_due_at = now() + interval '${RETENTION_RELOOK_MINUTES} minutes'
      WHERE e.enterprise_id = (SELECT enterprise_id FROM enterprises
                                WHERE retention_days IS NOT NULL AND (retention_due_at IS NULL OR retention_due_at <= now())
                                ORDER BY retention_due_at NULLS FIRST LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING e.enterprise_id AS "enterpriseId",
                ${isoTime('(now() - make_interval(days => e.retention_days))')} AS cutoff`,
  )
  return due && { ...due, enterpriseId: Number(due.enterpriseId) }
}

/** A retention policy is looked at again this long after it was last. */
const RETENTION_RELOOK_MINUTES = 5
