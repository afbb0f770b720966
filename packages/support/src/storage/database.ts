/**
 * The one interface the platform talks to storage through. Both backends (embedded PGlite and
 * PostgreSQL) run the same SQL with $n placeholders; int8 values (counts, ids) arrive as numbers.
 */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres'
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Runs fn's statements on one connection, each committed as it runs (no transaction held open), so that
   * temporary tables fn creates stay visible to it; they end with the connection should fn fail to drop
   * them. On PGlite, the one connection: other statements run between fn's, and see its temporary tables.
   */
  session<T>(fn: (db: Queryable) => Promise<T>): Promise<T>
  /**
   * Calls onNotify with the payload of each NOTIFY on the channel (from any connection, after its
   * commit); resolves to a function that stops listening. Best effort: a lost connection is
   * re-established, and notifications sent meanwhile are lost, so listeners also poll (or expire).
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

/** int8 arrives as a JavaScript number: every int8 the platform stores (ids, counts) is a safe integer. */
export const INT8_OID = 20
export const parseInt8 = (value: string): number => Number(value)
