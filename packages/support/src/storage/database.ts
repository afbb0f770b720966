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

/**
 * Runs one statement on a generic plan, made once per connection, in a transaction of its own (inside a
 * caller's transaction, given as `db`, it runs as it is). For a statement PostgreSQL would otherwise plan
 * at every call: it keeps a generic plan only while that plan's estimated cost is no higher than the plans
 * made for the values given, and a generic plan guesses, for one, that a LIMIT it cannot see reads a tenth
 * of the rows. Only where the generic plan was measured to run no slower.
 */
export function queryOnGenericPlan<Row = Record<string, unknown>>(
  db: Queryable,
  sql: string,
  params: readonly unknown[],
): Promise<Row[]> {
  if (!('transaction' in db)) return db.query<Row>(sql, params)
  return (db as Database).transaction(async (tx) => {
    await tx.query('SET LOCAL plan_cache_mode = force_generic_plan')
    return tx.query<Row>(sql, params)
  })
}
