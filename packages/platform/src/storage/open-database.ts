import { type Database, LockHeldError, openPglite, openPostgres } from '@earshot/support/storage'
import { migrate } from './migrations.js'

export interface StorageOptions {
  /** PostgreSQL connection URL; when absent the embedded database in dataDir is used. */
  databaseUrl?: string | undefined
  /** PGlite data directory; undefined keeps the embedded database in memory. */
  dataDir?: string | undefined
  /** PostgreSQL pool size. */
  poolSize?: number | undefined
  /** A database already open, used instead of opening one (tests). */
  database?: Database | undefined
}

/** Opens the configured backend (or takes the one given) and brings its schema up to date. */
export async function openDatabase(options: StorageOptions): Promise<Database> {
  const db = options.database ?? (await openConfigured(options))
  try {
    await migrate(db)
  } catch (error) {
    await db.close()
    throw error
  }
  return db
}

function openConfigured(options: StorageOptions): Promise<Database> {
  if (options.databaseUrl) {
    return openPostgres({ connectionString: options.databaseUrl, max: options.poolSize ?? 20 })
  }
  return openPglite(options.dataDir, {
    refuseLocked: (directory, pid) =>
      new LockHeldError(
        `the data directory ${directory} is in use by another Earshot process (pid ${pid}); stop it first, or point EARSHOT_DATA_DIR elsewhere`,
      ),
  })
}
