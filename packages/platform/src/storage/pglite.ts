import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { type Database, INT8_OID, parseInt8 } from './database.js'
import { acquireLockFile } from './lock-file.js'

/**
 * Opens the embedded database in a data directory, held by an exclusive lock file beside it so a
 * second process is refused instead of corrupting it. `dataDir` undefined means in memory (tests).
 */
export async function openPglite(dataDir: string | undefined): Promise<Database> {
  let release = () => {}
  if (dataDir) {
    const directory = resolve(dataDir)
    mkdirSync(dirname(directory), { recursive: true })
    release = acquireLockFile(`${directory}.lock`, `the data directory ${directory}`)
  }
  let db: PGlite
  try {
    db = await PGlite.create(dataDir ? resolve(dataDir) : undefined, { parsers: { [INT8_OID]: parseInt8 } })
  } catch (error) {
    release()
    throw error
  }
  return {
    kind: 'pglite',
    query: async (sql, params) => (await db.query(sql, params as unknown[])).rows as never,
    transaction: (fn) =>
      db.transaction((tx) =>
        fn({ query: async (sql, params) => (await tx.query(sql, params as unknown[])).rows as never }),
      ),
    listen: (channel, onNotify) => db.listen(channel, () => onNotify()),
    async close() {
      try {
        await db.close()
      } finally {
        release()
      }
    },
  }
}
