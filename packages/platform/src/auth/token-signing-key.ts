import type { Queryable } from '../storage/database.js'

/**
 * A platform-wide value made once and shared by every instance on the database (a signing key): the first
 * instance to ask stores what `make` gives; every one answers what was stored.
 */
export async function madeOnce(db: Queryable, name: string, make: () => string): Promise<string> {
  await db.query(
    `INSERT INTO platform_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
    [name, make()],
  )
  const [row] = await db.query<{ value: string }>(`SELECT value FROM platform_settings WHERE name = $1`, [
    name,
  ])
  return (row as { value: string }).value
}

/** The key that signs access tokens (access-tokens.ts). */
export async function tokenSigningKey(db: Queryable, randomBytes: (size: number) => Buffer): Promise<Buffer> {
  return Buffer.from(
    await madeOnce(db, 'token_signing_key', () => randomBytes(32).toString('base64')),
    'base64',
  )
}
