import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { postgreSplitterOptions, splitQuery } from 'dbgate-query-splitter'
import type { Database, Queryable } from './database.js'

/**
 * The schema, one versioned migration after another, each the fixed SQL text of `sql/NNNNNN.sql` (its
 * first line `-- name`); both backends run the same statements. A released migration is never edited: a
 * change is a new file (migrations.test.ts holds the latest state lists to the code's state machines).
 * Each applied migration keeps its text's SHA-256, so that an edited file, or a database that a newer
 * Earshot migrated, stops the start instead of going unnoticed.
 */
export interface Migration {
  version: number
  name: string
  statements: string[]
  checksum: string
}

/** Why a database's schema cannot be used by this code; the message says what to do. */
export class SchemaMismatchError extends Error {
  readonly code = 'schema_mismatch'
}

const SQL_DIR = new URL('../../sql/', import.meta.url)
const FILE_NAME = /^(\d{6})\.sql$/

/** The migration a file holds: its statements as PostgreSQL would split them (quotes, $$ bodies). */
export function parseMigration(version: number, text: string): Migration {
  const name = /^-- (.+)\n/.exec(text)?.[1]
  if (!name) throw new Error(`migration ${version} does not begin with a line "-- its name"`)
  const statements = splitQuery(text, postgreSplitterOptions).map(String)
  return { version, name, statements, checksum: createHash('sha256').update(text).digest('hex') }
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

/**
 * Applies every migration not yet applied, each in its own transaction; returns the versions applied.
 * Throws SchemaMismatchError, applying nothing, when the database has a migration this code does not know
 * or one applied from another text than its file.
 */
export async function migrate(db: Database, all: readonly Migration[] = migrations): Promise<number[]> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    )
    await tx.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text')
    await checkApplied(tx, all)
  })
  const applied: number[] = []
  for (const migration of all) {
    const done = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
      const existing = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [
        migration.version,
      ])
      if (existing.length > 0) return false
      for (const statement of migration.statements) await tx.query(statement)
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        migration.checksum,
      ])
      return true
    })
    if (done) applied.push(migration.version)
  }
  return applied
}

/**
 * Compares what the database applied with the files. A migration applied before checksums were kept gets
 * its file's checksum now: from then on, an edit of that file is caught too.
 */
async function checkApplied(tx: Queryable, all: readonly Migration[]): Promise<void> {
  const rows = await tx.query<{ version: number; name: string; checksum: string | null }>(
    'SELECT version, name, checksum FROM schema_migrations ORDER BY version',
  )
  const known = new Map(all.map((migration) => [migration.version, migration]))
  const latest = all.at(-1)?.version ?? 0
  for (const row of rows) {
    const file = known.get(row.version)
    if (!file) {
      throw new SchemaMismatchError(
        `the database's schema is at migration ${rows.at(-1)?.version} ("${rows.at(-1)?.name}"), newer than this Earshot, which knows migrations up to ${latest}: run the Earshot release that migrated it (or a later one), or restore a backup taken before that upgrade`,
      )
    }
    if (row.checksum === null) {
      await tx.query('UPDATE schema_migrations SET checksum = $2 WHERE version = $1', [
        row.version,
        file.checksum,
      ])
    } else if (row.checksum !== file.checksum) {
      throw new SchemaMismatchError(
        `migration ${row.version} ("${row.name}") was applied from another text than sql/${String(row.version).padStart(6, '0')}.sql holds now (SHA-256 ${row.checksum.slice(0, 12)}… applied, ${file.checksum.slice(0, 12)}… in the file): a released migration must not change. Put the released file back (its text from the release that applied it), and make any change a new migration`,
      )
    }
  }
}
