import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { EarshotConfigError, EarshotError } from '../client/errors.js'

/** What the receiver's stores talk to: the same SQL ($n placeholders) on PGlite and PostgreSQL. */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres'
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  close(): Promise<void>
}

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

const INT8_OID = 20
/** Counts arrive as numbers: every int8 the kit stores is a safe integer. */
const parseInt8 = (value: string): number => Number(value)

/** Opens PostgreSQL when databaseUrl is set, else the embedded PGlite (on disk in dataDir, or in memory). */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl !== undefined && options.dataDir !== undefined) {
    throw new EarshotConfigError('give either databaseUrl or dataDir, not both')
  }
  return options.databaseUrl !== undefined ? openPostgres(options.databaseUrl) : openPglite(options.dataDir)
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  const directory = dataDir === undefined ? undefined : resolve(dataDir)
  let release = () => {}
  if (directory) {
    mkdirSync(dirname(directory), { recursive: true })
    release = lockDirectory(directory)
  }
  let db: PGlite
  try {
    db = await PGlite.create(directory, { parsers: { [INT8_OID]: parseInt8 } })
  } catch (error) {
    release()
    throw error
  }
  const rows = async <Row>(runner: Pick<PGlite, 'query'>, sql: string, params?: readonly unknown[]) =>
    (await runner.query(sql, params as unknown[])).rows as Row[]
  return {
    kind: 'pglite',
    query: (sql, params) => rows(db, sql, params),
    transaction: (fn) => db.transaction((tx) => fn({ query: (sql, params) => rows(tx, sql, params) })),
    async close() {
      try {
        await db.close()
      } finally {
        release()
      }
    },
  }
}

async function openPostgres(connectionString: string): Promise<Database> {
  const types = {
    getTypeParser: ((oid: number, format?: string) =>
      oid === INT8_OID
        ? parseInt8
        : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
  }
  const pool = new pg.Pool({ connectionString, max: 10, types })
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {})
  await pool.query('SELECT 1')
  const rows = async <Row>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) =>
    (await client.query(sql, params as unknown[])).rows as Row[]
  return {
    kind: 'postgres',
    query: (sql, params) => rows(pool, sql, params),
    async transaction(fn) {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const result = await fn({ query: (sql, params) => rows(client, sql, params) })
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {})
        throw error
      } finally {
        client.release()
      }
    },
    close: () => pool.end(),
  }
}

/**
 * PGlite must be opened by one process only: a lock file beside the directory holds the owner's pid.
 * A lock left by a process that is gone (killed with -9) is taken over.
 */
function lockDirectory(directory: string): () => void {
  const path = `${directory}.lock`
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      let released = false
      return () => {
        if (released) return
        released = true
        try {
          unlinkSync(path)
        } catch {}
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = Number.parseInt(readFileSync(path, 'utf8'), 10)
      if (Number.isInteger(holder) && isRunning(holder)) {
        throw new DataDirLockedError(`the data directory ${directory} is in use by process ${holder}`)
      }
      unlinkSync(path)
    }
  }
  throw new DataDirLockedError(`the data directory ${directory} could not be locked (${path})`)
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
