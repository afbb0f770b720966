import type { Queryable } from '../storage/database.js'

/**
 * Bounds what signing in leaves behind: sessions ended or past their absolute lifetime, failed sign-ins
 * forgotten (after 15 min without another) and no longer locked, and setup links used or expired a day ago.
 * Revoked and expired API keys stay listed, for the record of who held what.
 */
export async function forgetStaleSignIns(
  db: Queryable,
  now: number,
  sessionMaxSeconds: number,
): Promise<void> {
  const at = (ms: number) => new Date(ms).toISOString()
  await db.query('DELETE FROM operator_sessions WHERE ended_at IS NOT NULL OR created_at < $1', [
    at(now - sessionMaxSeconds * 1000),
  ])
  await db.query(
    'DELETE FROM sign_in_failures WHERE last_failure_at < $1 AND (locked_until IS NULL OR locked_until < $2)',
    [at(now - 900_000), at(now)],
  )
  await db.query('DELETE FROM operator_setup_tokens WHERE expires_at < $1 OR used_at < $1', [
    at(now - 86_400_000),
  ])
}
