import { type EnvelopeKey, loadKey } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'

/** What a request needs to know of one (enterprise, keyVersion), as read from the database. */
export interface EnterpriseKey {
  disabled: boolean
  /** Every sealed request must carry issuedAt (`earshot enterprise update --require-issued-at`). */
  requireIssuedAt: boolean
  /** Undefined when the enterprise has no such keyVersion; the error when its stored secret does not load. */
  key: EnvelopeKey | Error | undefined
  /** Epoch milliseconds from which the key is refused (set by a rotation); null for a current key. */
  retiresAtMs: number | null
}

/** Reads one (enterprise, keyVersion); undefined when there is no such enterprise. */
export async function loadEnterpriseKey(
  db: Queryable,
  enterpriseId: number,
  keyVersion: number,
): Promise<EnterpriseKey | undefined> {
  const [row] = await db.query<{
    disabled: boolean
    require_issued_at: boolean
    secret: string | null
    retires_at_ms: number | null
  }>(
    `SELECT e.disabled_at IS NOT NULL AS disabled, e.require_issued_at, k.secret,
            (extract(epoch FROM k.retires_at) * 1000)::float8 AS retires_at_ms
       FROM enterprises e
       LEFT JOIN enterprise_keys k ON k.enterprise_id = e.enterprise_id AND k.key_version = $2
      WHERE e.enterprise_id = $1`,
    [enterpriseId, keyVersion],
  )
  if (!row) return undefined
  return {
    disabled: row.disabled,
    requireIssuedAt: row.require_issued_at,
    key: row.secret === null ? undefined : keyOf(row.secret),
    retiresAtMs: row.retires_at_ms,
  }
}

function keyOf(secret: string): EnvelopeKey | Error {
  try {
    return loadKey(secret)
  } catch (error) {
    return error as Error
  }
}

/**
 * The key if it may be used at nowMs: known and not retired. Checked on every use, so a key stops
 * working the moment its retires_at passes, whether or not anything was notified.
 */
export function usableKey(
  credentials: EnterpriseKey | undefined,
  nowMs: number,
): EnvelopeKey | Error | undefined {
  if (!credentials?.key) return undefined
  return credentials.retiresAtMs === null || credentials.retiresAtMs > nowMs ? credentials.key : undefined
}
