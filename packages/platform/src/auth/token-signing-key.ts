import type { Queryable } from '../storage/database.js'

/** The key that signs access tokens (access-tokens.ts), shared by every instance on the database; made once. */
export async function tokenSigningKey(db: Queryable, randomBytes: (size: number) => Buffer): Promise<Buffer> {
  await db.query(
    `INSERT INTO platform_settings (name, value) VALUES ('token_signing_key', $1) ON CONFLICT (name) DO NOTHING`,
    [randomBytes(32).toString('base64')],
  )
  const [row] = await db.query<{ value: string }>(
    `SELECT value FROM platform_settings WHERE name = 'token_signing_key'`,
  )
  return Buffer.from((row as { value: string }).value, 'base64')
}
