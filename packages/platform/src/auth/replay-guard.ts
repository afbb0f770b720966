import { batcher } from '@earshot/support/batcher'
import type { Database, Queryable } from '../storage/database.js'

/** A request nonce to record as accepted under (enterprise, keyVersion) until expiresAtMs. */
export interface NonceUse {
  enterpriseId: number
  keyVersion: number
  /** Canonical standard Base64, as the envelope carries it (checked before). */
  nonce: string
  expiresAtMs: number
}

/**
 * Records a nonce, resolving once its row is committed: false when it was accepted before, the request
 * being a replay (code 4090).
 */
export type NonceGuard = (use: NonceUse) => Promise<boolean>

/**
 * Group commit: the nonces of the requests in flight are inserted by one statement per turn of the event
 * loop, each request answered once that statement has committed.
 */
export function nonceGuard(db: Database): NonceGuard {
  return batcher((uses: NonceUse[]) => acceptNonces(db, uses), {
    maxBatch: 512,
    // One statement at a time, also on PostgreSQL: the requests that arrive while it runs make the next
    // one, so a busy instance sends fewer and larger statements, and each costs a round trip and a
    // commit however few nonces it holds.
    parallel: 1,
  })
}

/**
 * Records the nonces in one statement; for each, whether it was new. The database's unique key decides
 * between instances; within the list, a nonce repeated is a replay of its first occurrence.
 */
export async function acceptNonces(db: Queryable, uses: readonly NonceUse[]): Promise<boolean[]> {
  const firsts = new Map<string, NonceUse>()
  const repeated = uses.map((use) => {
    const key = nonceKey(use.enterpriseId, use.keyVersion, use.nonce)
    if (firsts.has(key)) return true
    firsts.set(key, use)
    return false
  })
  const unique = [...firsts.values()]
  const rows = await db.query<{ enterprise_id: number; key_version: number; nonce: string }>(
    `INSERT INTO replay_nonces (enterprise_id, key_version, nonce, expires_at)
     SELECT e, k, decode(n, 'base64'), to_timestamp(x / 1000)
       FROM unnest($1::int8[], $2::int4[], $3::text[], $4::float8[]) AS u(e, k, n, x)
     ON CONFLICT DO NOTHING
     RETURNING enterprise_id, key_version, encode(nonce, 'base64') AS nonce`,
    [
      unique.map((use) => use.enterpriseId),
      unique.map((use) => use.keyVersion),
      unique.map((use) => use.nonce),
      unique.map((use) => use.expiresAtMs),
    ],
  )
  const inserted = new Set(rows.map((row) => nonceKey(row.enterprise_id, row.key_version, row.nonce)))
  return uses.map(
    (use, i) => !repeated[i] && inserted.has(nonceKey(use.enterpriseId, use.keyVersion, use.nonce)),
  )
}

const nonceKey = (enterpriseId: number, keyVersion: number, nonce: string) =>
  `${enterpriseId}:${keyVersion}:${nonce}`

/** Nonces forgotten per statement: on the embedded database each statement holds the one connection. */
const FORGET_BATCH = 5000

/** Forgets nonces whose window has passed, a batch per statement, oldest first; returns how many. */
export async function forgetExpiredNonces(db: Queryable, nowMs: number): Promise<number> {
  let forgotten = 0
  for (let batch = FORGET_BATCH; batch === FORGET_BATCH; forgotten += batch) {
    const [row] = await db.query<{ forgotten: number }>(
      `WITH expired AS (
         SELECT enterprise_id, key_version, nonce FROM replay_nonces
          WHERE expires_at < to_timestamp($1::float8 / 1000) ORDER BY expires_at LIMIT $2),
       gone AS (
         DELETE FROM replay_nonces n USING expired e
          WHERE (n.enterprise_id, n.key_version, n.nonce) = (e.enterprise_id, e.key_version, e.nonce)
         RETURNING 1)
       SELECT count(*) AS forgotten FROM gone`,
      [nowMs, FORGET_BATCH],
    )
    batch = row?.forgotten ?? 0
  }
  return forgotten
}
