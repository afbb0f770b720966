import type { Queryable } from '../storage/database.js'

/*
 * Failed sign-ins are counted per account and per client address, in the database so that every instance
 * counts the same. From the fifth failure in a row, each further one locks the subject for twice as long
 * (30 s, 60 s, … up to 15 min); a success clears the account's count. A count left alone for 15 min starts
 * over.
 */
const FREE_FAILURES = 4
const FIRST_LOCK_SECONDS = 30
const MAX_LOCK_SECONDS = 900
const FORGET_AFTER_MS = 900_000

export function throttleSubjects(email: string, address: string): string[] {
  return [`account:${email.trim().toLowerCase()}`, `address:${address}`]
}

/** Seconds until the subjects may try again; 0 when none is locked. */
export async function lockedFor(db: Queryable, subjects: string[], now: number): Promise<number> {
  const rows = await db.query<{ lockedUntil: Date | string | null }>(
    'SELECT locked_until AS "lockedUntil" FROM sign_in_failures WHERE subject = ANY ($1::text[])',
    [subjects],
  )
  const until = Math.max(0, ...rows.map((row) => (row.lockedUntil ? new Date(row.lockedUntil).getTime() : 0)))
  return until > now ? Math.ceil((until - now) / 1000) : 0
}

export async function recordFailure(db: Queryable, subjects: string[], now: number): Promise<void> {
  for (const subject of subjects) {
    const [row] = await db.query<{ failures: number; last: Date | string }>(
      'SELECT failures, last_failure_at AS last FROM sign_in_failures WHERE subject = $1',
      [subject],
    )
    const failures = row && now - new Date(row.last).getTime() < FORGET_AFTER_MS ? row.failures + 1 : 1
    const lockSeconds =
      failures > FREE_FAILURES
        ? Math.min(MAX_LOCK_SECONDS, FIRST_LOCK_SECONDS * 2 ** (failures - FREE_FAILURES - 1))
        : 0
    await db.query(
      `INSERT INTO sign_in_failures (subject, failures, last_failure_at, locked_until) VALUES ($1, $2, $3, $4)
       ON CONFLICT (subject) DO UPDATE SET failures = $2, last_failure_at = $3, locked_until = $4`,
      [
        subject,
        failures,
        new Date(now).toISOString(),
        lockSeconds ? new Date(now + lockSeconds * 1000).toISOString() : null,
      ],
    )
  }
}

export async function clearFailures(db: Queryable, subject: string): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE subject = $1', [subject])
}
