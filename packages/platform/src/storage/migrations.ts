import { readdirSync, readFileSync } from 'node:fs'
import { postgreSplitterOptions, splitQuery } from 'dbgate-query-splitter'
import type { Database } from './database.js'

/**
 * The schema, one versioned migration after another, each the fixed SQL text of `sql/NNNNNN.sql` (its
 * first line `-- name`); both backends run the same statements. A released migration is never edited: a
 * change is a new file (migrations.test.ts holds the latest state lists to the code's state machines).
 */
export interface Migration {
  version: number
  name: string
  statements: string[]
}

const SQL_DIR = new URL('../../sql/', import.meta.url)
const FILE_NAME = /^(\d{6})\.sql$/

/** The migration a file holds: its statements as PostgreSQL would split them (quotes, $$ bodies). */
export function parseMigration(version: number, text: string): Migration {
  const name = /^-- (.+)\n/.exec(text)?.[1]
  if (!name) throw new Error(`migration ${version} does not begin with a line "-- its name"`)
  const statements = splitQuery(text, postgreSplitterOptions).map(String)
  return { version, name, statements }
}

function readMigrations(): Migration[] {
  const files = readdirSync(SQL_DIR)
    .filter((file) => FILE_NAME.test(file))
    .sort()
  return files.map((file, i) => {
    const version = Number(FILE_NAME.exec(file)?.[1])
    if (version !== i + 1) throw new Error(`sql/${file}: migration ${i + 1} is missing`)
    return parseMigration(version, readFileSync(new URL(file, SQL_DIR), 'utf8'))
  })
}

export const migrations: readonly Migration[] = readMigrations()

/** Any number, shared by every instance: serialises migrations started at once on one PostgreSQL. */
const MIGRATION_LOCK = 0x4561_7273

/** Applies every migration not yet applied, each in its own transaction; returns the versions applied. */
export async function migrate(db: Database, all: readonly Migration[] = migrations): Promise<number[]> {
  const applied: number[] = []
  for (const migration of all) {
    const done = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
      await tx.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      )
      const existing = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [
        migration.version,
      ])
      if (existing.length > 0) return false
      for (const statement of migration.statements) await tx.query(statement)
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      return true
    })
    if (done) applied.push(migration.version)
  }
  return applied
}
