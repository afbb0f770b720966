import pg from 'pg'
import { type Database, INT8_OID, parseInt8, type Queryable } from './database.js'

export interface PostgresOptions {
  connectionString: string
  /** Pool size; a platform instance rarely needs more than a few connections per core. */
  max?: number
}

export async function openPostgres({ connectionString, max = 20 }: PostgresOptions): Promise<Database> {
  const types = {
    getTypeParser: ((oid: number, format?: string) =>
      oid === INT8_OID
        ? parseInt8
        : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
  }
  const pool = new pg.Pool({ connectionString, max, types })
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {})
  await pool.query('SELECT 1')

  const run = async <Row>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) =>
    (await client.query(sql, params as unknown[])).rows as Row[]

  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    async transaction(fn) {
      const client = await pool.connect()
      const tx: Queryable = { query: (sql, params) => run(client, sql, params) }
      try {
        await client.query('BEGIN')
        const result = await fn(tx)
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
