import type { Queryable } from '../storage/database.js'

/**
 * Records a request nonce as accepted under (enterprise, keyVersion) until the replay window ends.
 * Returns false when it was already accepted: the request is a replay (DESIGN.md §1, code 4090).
 */
export async function acceptNonce(
  db: Queryable,
  enterpriseId: number,
  keyVersion: number,
  nonce: string,
  expiresAtMs: number,
): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO replay_nonces (enterprise_id, key_version, nonce, expires_at)
     VALUES ($1, $2, decode($3, 'base64'), to_timestamp($4::float8 / 1000))
     ON CONFLICT DO NOTHING RETURNING 1`,
    [enterpriseId, keyVersion, nonce, expiresAtMs],
  )
  return rows.length === 1
}

/** Forgets nonces whose window has passed; returns how many. */
export async function forgetExpiredNonces(db: Queryable, nowMs: number): Promise<number> {
  const [row] = await db.query<{ forgotten: number }>(
    `WITH gone AS (DELETE FROM replay_nonces WHERE expires_at < to_timestamp($1::float8 / 1000) RETURNING 1)
     SELECT count(*) AS forgotten FROM gone`,
    [nowMs],
  )
  return row?.forgotten ?? 0
}
