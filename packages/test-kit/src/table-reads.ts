import type { Queryable } from '@earshot/support/storage'

/**
 * Rows the current transaction has read so far of each table named, by sequential scan or through an index
 * (pg_stat_xact_user_tables): for a test that a statement reads only what it needs.
 */
export async function rowsRead(tx: Queryable, tables: readonly string[]): Promise<Record<string, number>> {
  const rows = await tx.query<{ relname: string; read: number }>(
    `SELECT relname, (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int AS read
       FROM pg_stat_xact_user_tables WHERE relname = ANY($1::text[])`,
    [tables],
  )
  return Object.fromEntries(
    tables.map((table) => [table, rows.find((row) => row.relname === table)?.read ?? 0]),
  )
}
