import { createHash } from 'node:crypto'
import type pg from 'pg'
import { type Database, INT8_OID, parseInt8, type Queryable } from './database.js'
import { importOptional } from './optional-module.js'

export interface PostgresOptions {
  connectionString: string
  /** Pool size; a platform instance rarely needs more than a few connections per core. */
  max?: number
}

export async function openPostgres({ connectionString, max = 20 }: PostgresOptions): Promise<Database> {
  const { default: pg } = await importOptional('pg', () => import('pg'))
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

  // Every statement is named after its text, so each connection parses and plans it once. The
  // platform's SQL is a fixed set (values always travel as parameters), so the set stays small.
  const names = new Map<string, string>()
  const nameOf = (sql: string) => {
    let name = names.get(sql)
    if (!name) {
      name = `earshot_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`
      names.set(sql, name)
    }
    return name
  }
  /**
   * Runs `use` on a client of its own. A connection lost between two of its statements is an 'error' event
   * on the client, which unheard would end the process: it is heard here, the next statement fails, and the
   * connection is closed rather than pooled again (so is any connection of a failed use, when closeOnFailure).
   */
  const checkedOut = async <T>(use: (client: pg.PoolClient) => Promise<T>, closeOnFailure: boolean) => {
    const client = await pool.connect()
    let lost = false
    let failed = false
    const onError = () => {
      lost = true
    }
    client.on('error', onError)
    try {
      return await use(client)
    } catch (error) {
      failed = true
      throw error
    } finally {
      client.off('error', onError)
      client.release(lost || (closeOnFailure && failed))
    }
  }
  const run = async <Row>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) =>
    (await client.query({ name: nameOf(sql), text: sql, values: params as unknown[] })).rows as Row[]

  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    transaction: (fn) =>
      checkedOut(async (client) => {
        const tx: Queryable = { query: (sql, params) => run(client, sql, params) }
        try {
          await client.query('BEGIN')
          const result = await fn(tx)
          await client.query('COMMIT')
          return result
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {})
          throw error
        }
      }, false),
    // A failed session's connection is closed, with whatever temporary tables it left.
    session: (fn) => checkedOut((client) => fn({ query: (sql, params) => run(client, sql, params) }), true),
    listen: (channel, onNotify) => listenOn(pg, connectionString, channel, onNotify),
    close: () => pool.end(),
  }
}

const RECONNECT_DELAY_MS = 1000

/** LISTEN on a dedicated connection (pooled ones come and go), re-established when it drops. */
async function listenOn(
  pg: typeof import('pg').default,
  connectionString: string,
  channel: string,
  onNotify: (payload: string) => void,
): Promise<() => Promise<void>> {
  let stopped = false
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined
  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString })
    next.on('notification', (message) => {
      if (message.channel === channel) onNotify(message.payload ?? '')
    })
    next.on('error', () => {
      next.end().catch(() => {})
      if (client === next && !stopped) retry = setTimeout(reconnect, RECONNECT_DELAY_MS)
    })
    await next.connect()
    await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
    client = next
  }
  const reconnect = () => {
    connect().catch(() => {
      if (!stopped) retry = setTimeout(reconnect, RECONNECT_DELAY_MS)
    })
  }
  await connect()
  return async () => {
    stopped = true
    clearTimeout(retry)
    await client?.end().catch(() => {})
  }
}
