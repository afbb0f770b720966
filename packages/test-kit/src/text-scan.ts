import pg from 'pg'

/** Where a text was found: table, column, and which of the texts looked for. */
export interface TextFound {
  table: string
  column: string
  text: string
}

/** A database that answers rows (the platform's, or a plain PostgreSQL connection). */
export interface RowSource {
  query<T>(sql: string, params?: unknown[]): Promise<T[]>
}

/**
 * Looks for each text in every column of every table that can hold text (text, varchar, json, jsonb, and
 * arrays of text), by SQL: what an erasure must leave no trace of.
 */
export async function findText(db: RowSource, texts: readonly string[]): Promise<TextFound[]> {
  const columns = await db.query<{ table_name: string; column_name: string }>(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
        AND (c.data_type IN ('text', 'character varying', 'json', 'jsonb')
             OR (c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_varchar')))
      ORDER BY 1, 2`,
  )
  const found: TextFound[] = []
  for (const { table_name: table, column_name: column } of columns) {
    const rows = await db.query<{ text: string }>(
      `SELECT DISTINCT t.text FROM ${quote(table)} r CROSS JOIN unnest($1::text[]) AS t(text)
        WHERE position(t.text IN r.${quote(column)}::text) > 0`,
      [texts],
    )
    for (const row of rows) found.push({ table, column, text: row.text })
  }
  return found
}

/** findText over a PostgreSQL database by its URL. */
export async function findTextInPostgres(url: string, texts: readonly string[]): Promise<TextFound[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await findText(
      { query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[] },
      texts,
    )
  } finally {
    await client.end()
  }
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
