import { type Database, LockHeldError, openPglite, openPostgres } from '@earshot/support/storage'
import { migrate } from './migrations.js'

export interface StorageOptions {
  /** PostgreSQL connection URL; when absent the embedded database in dataDir is used. */
  databaseUrl?: string | undefined
  /** PGlite data directory; undefined keeps the embedded database in memory. */
  dataDir?: string | undefined
  /** PostgreSQL pool size. */
  poolSize?: number | undefined
  /** An in-memory database starts as a copy of this dumped one (tests: one already migrated). */
  pgliteImage?: string | undefined
}

/** Opens the configured backend and brings its schema up to date. */
export async function openDatabase(options: StorageOptions): Promise<Database> {
  const db = options.databaseUrl
    ? await openPostgres({ connectionString: options.databaseUrl, max: options.poolSize ?? 20 })
    : await openPglite(options.dataDir, {
        image: options.pgliteImage,
        refuseLocked: (directory, pid) =>
          new LockHeldError(
            `the data directory ${directory} is in use by another Earshot process (pid ${pid}); stop it first, or point EARSHOT_DATA_DIR elsewhere`,
          ),
      })
  try {
    await migrate(db)
  } catch (error) {
    await db.close()
    throw error
  }
  return db
}
