import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { type Database, INT8_OID, parseInt8 } from './database.js'
import { acquireLockFile, LockHeldError } from './lock-file.js'

export interface PgliteOptions {
  /** The error for a data directory another live process holds; LockHeldError by default. */
  refuseLocked?: (directory: string, holderPid: number) => Error
}

const inUse = (directory: string, holderPid: number) =>
  new LockHeldError(
    `the data directory ${directory} is in use by another Earshot process (pid ${holderPid}); stop it first`,
  )

/**
 * Opens the embedded database in a data directory, held by an exclusive lock file beside it so a
 * second process is refused instead of corrupting it. `dataDir` undefined means in memory (tests).
 */
export async function openPglite(
  dataDir: string | undefined,
  { refuseLocked = inUse }: PgliteOptions = {},
): Promise<Database> {
  let release = () => {}
  if (dataDir) {
    const directory = resolve(dataDir)
    mkdirSync(dirname(directory), { recursive: true })
    release = acquireLockFile(`${directory}.lock`, (holderPid) => refuseLocked(directory, holderPid))
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
