import type { Queryable } from '../storage/database.js'

/** A key is usable until its retires_at (set on rotation to now + grace); null means current. */
const ACTIVE = '(k.retires_at IS NULL OR k.retires_at > now())'

export interface TokenRequestCredentials {
  secret: string
  disabled: boolean
}

/** The key a token request is sealed under; undefined for an unknown enterprise or keyVersion. */
export async function credentialsForTokenRequest(
  db: Queryable,
  enterpriseId: number,
  keyVersion: number,
): Promise<TokenRequestCredentials | undefined> {
  const [row] = await db.query<TokenRequestCredentials>(
    `SELECT k.secret, e.disabled_at IS NOT NULL AS disabled
       FROM enterprise_keys k JOIN enterprises e USING (enterprise_id)
      WHERE k.enterprise_id = $1 AND k.key_version = $2 AND ${ACTIVE}`,
    [enterpriseId, keyVersion],
  )
  return row
}

export interface BearerCredentials {
  disabled: boolean
  /** False once the keyVersion the token was issued under is retired: the token is revoked. */
  tokenKeyActive: boolean
  /** The secret of the request envelope's keyVersion, null when unknown or retired. */
  secret: string | null
}

/** Everything an authenticated request needs, in one round trip. */
export async function credentialsForBearer(
  db: Queryable,
  enterpriseId: number,
  tokenKeyVersion: number,
  envelopeKeyVersion: number,
): Promise<BearerCredentials | undefined> {
  const [row] = await db.query<BearerCredentials>(
    `SELECT e.disabled_at IS NOT NULL AS disabled,
            EXISTS (SELECT 1 FROM enterprise_keys k
                     WHERE k.enterprise_id = e.enterprise_id AND k.key_version = $2 AND ${ACTIVE}) AS "tokenKeyActive",
            (SELECT k.secret FROM enterprise_keys k
              WHERE k.enterprise_id = e.enterprise_id AND k.key_version = $3 AND ${ACTIVE}) AS secret
       FROM enterprises e WHERE e.enterprise_id = $1`,
    [enterpriseId, tokenKeyVersion, envelopeKeyVersion],
  )
  return row
}
