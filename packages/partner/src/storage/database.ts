import { type Database, openPglite, openPostgres } from '@earshot/support/storage'
import { EarshotConfigError, EarshotError } from '../client/errors.js'

export type { Database, Queryable } from '@earshot/support/storage'

export interface DatabaseOptions {
  /** PostgreSQL connection URL; when set, dataDir is not used. */
  databaseUrl?: string | undefined
  /** PGlite data directory; undefined (and no databaseUrl) keeps the database in memory. */
  dataDir?: string | undefined
}

/** The data directory is held by another live process. */
export class DataDirLockedError extends EarshotError {
  readonly code = 'ERR_EARSHOT_DATA_DIR_LOCKED'
}

/** Opens PostgreSQL when databaseUrl is set, else the embedded PGlite (on disk in dataDir, or in memory). */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl !== undefined && options.dataDir !== undefined) {
    throw new EarshotConfigError('give either databaseUrl or dataDir, not both')
  }
  if (options.databaseUrl !== undefined)
    return openPostgres({ connectionString: options.databaseUrl, max: 10 })
  return openPglite(options.dataDir, {
    refuseLocked: (directory, pid) =>
      new DataDirLockedError(`the data directory ${directory} is in use by process ${pid}`),
  })
}
