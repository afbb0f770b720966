import { createHash, randomBytes } from 'node:crypto'
import { migrations, openDatabase } from '@earshot/platform/internal'
import pg from 'pg'

/**
 * A test platform's scratch PostgreSQL database is made as a copy of one already migrated (CREATE DATABASE
 * … TEMPLATE): about 0.2 s instead of a second or more of migrations. The template is made once for each
 * version of the schema and kept on the server, for every later test process; a process that finds none
 * makes one under a name of its own and renames it into place (two at once: the second rename fails, and
 * that copy is dropped). The second rename fails as the name taken (42P04) or, when the two renames overlap,
 * as the catalog's unique index refusing the second (23505).
 */

const PREFIX = 'earshot_template_'
const NAME_TAKEN = ['42P04', '23505']
let template: Promise<string> | undefined

/** The name of the migrated template database on the DATABASE_URL server. */
export function migratedPostgresTemplate(serverUrl: string): Promise<string> {
  template ??= existingOrNew(serverUrl)
  return template
}

async function existingOrNew(serverUrl: string): Promise<string> {
  const key = createHash('sha256').update(JSON.stringify(migrations)).digest('hex')
  const name = `${PREFIX}${key.slice(0, 16)}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (found.rowCount === 1) return name
    const partial = `${name}_${randomBytes(4).toString('hex')}`
    await admin.query(`CREATE DATABASE ${partial}`)
    // Opening a database migrates it.
    await (await openDatabase({ databaseUrl: databaseUrl(serverUrl, partial), poolSize: 1 })).close()
    await admin
      .query(`ALTER DATABASE ${partial} RENAME TO ${name}`)
      .catch(async (error: { code?: string }) => {
        await admin.query(`DROP DATABASE ${partial}`)
        if (!NAME_TAKEN.includes(error.code ?? '')) throw error
      })
    return name
  } finally {
    await admin.end()
  }
}

/** The URL of another database on the server `serverUrl` names. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.toString()
}
