export { type Database, INT8_OID, parseInt8, type Queryable, queryOnGenericPlan } from './database.js'
export { acquireLockFile, LockHeldError } from './lock-file.js'
export { openPglite, type PgliteDatabase, type PgliteOptions } from './pglite.js'
export { openPostgres, type PostgresOptions } from './postgres.js'
