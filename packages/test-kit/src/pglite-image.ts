import { createHash } from 'node:crypto'
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PlatformConfig } from '@earshot/platform'
import { migrate, migrations } from '@earshot/platform/internal'
import { type Database, openPglite, type PgliteDatabase } from '@earshot/support/storage'

/**
 * Where a test's PGlite starts, so that it skips initdb:
 * - in memory, a copy of an image of the platform's database, migrated: about 0.7 s of CPU instead of
 *   about 3 s of initdb and migrations;
 * - in a new data directory on disk, a copy of a data directory PGlite has initialized (and, for a
 *   platform's, migrated) and closed: about 1 s to copy and open instead of 8 s for PGlite's first open of
 *   a directory;
 * - in memory with no schema, for the tests of the storage itself, a copy of an image of an initialized one.
 * Each is made once for each version of PGlite (and of the schema and of the image's recipe, for the
 * image) and kept in the system's temporary directory for every later test process; a process that finds
 * none makes it (two at once each make their own and rename it into place).
 *
 * The image holds the platform's database only: PGlite serves one, and copying the two template databases
 * into every test platform's memory cost more CPU than the rest of its start.
 */
const RECIPE = 'platform database only, after a checkpoint'

let image: Promise<string> | undefined
let emptyImage: Promise<string> | undefined
const dataDirs = new Map<'initialized' | 'migrated', Promise<string>>()

/**
 * Prepares a test platform's PGlite: a data directory on disk that does not exist yet is made a copy of a
 * migrated one; an in-memory database is given the image to start from (returned; undefined otherwise).
 */
export async function preparePglite(
  config: Pick<PlatformConfig, 'databaseUrl' | 'dataDir'>,
): Promise<string | undefined> {
  if (config.databaseUrl !== undefined) return undefined
  if (config.dataDir === 'memory://') {
    image ??= cached(
      'earshot-pglite-image-',
      `${keyOf(pgliteVersion(), JSON.stringify(migrations), RECIPE)}.tar`,
      (path) => makeImage(path, migrate),
    )
    return image
  }
  if (!existsSync(config.dataDir)) await seedPgliteDataDir(config.dataDir, { migrated: true })
  return undefined
}

/**
 * Makes `dataDir`, which must not exist, a copy of a data directory PGlite has initialized (with no schema,
 * or `migrated` with the platform's): for a test that starts a command on a data directory of its own.
 */
export async function seedPgliteDataDir(dataDir: string, { migrated = false } = {}): Promise<void> {
  const kind = migrated ? 'migrated' : 'initialized'
  let source = dataDirs.get(kind)
  if (!source) {
    const key = migrated ? keyOf(pgliteVersion(), JSON.stringify(migrations)) : keyOf(pgliteVersion())
    source = cached(`earshot-pglite-${kind}-dir-`, key, async (path) => {
      const db = await openPglite(path)
      try {
        if (migrated) await migrate(db)
      } finally {
        await db.close()
      }
    })
    dataDirs.set(kind, source)
  }
  cpSync(await source, dataDir, { recursive: true, errorOnExist: true, force: false })
}

/** An in-memory PGlite with no schema, for a test of the storage itself: a copy of an image of one. */
export async function emptyPglite(): Promise<PgliteDatabase> {
  emptyImage ??= cached('earshot-pglite-empty-image-', `${keyOf(pgliteVersion(), RECIPE)}.tar`, (path) =>
    makeImage(path, async () => {}),
  )
  return openPglite(undefined, { image: await emptyImage })
}

/**
 * The path `prefix` + `name` in the temporary directory, made by `make` unless it is there already; what
 * an earlier version left under the same prefix is removed.
 */
async function cached(prefix: string, name: string, make: (path: string) => Promise<void>): Promise<string> {
  const path = join(tmpdir(), prefix + name)
  if (existsSync(path)) return path
  const partial = `${path}.${process.pid}`
  await make(partial)
  try {
    renameSync(partial, path)
  } catch (error) {
    if (!existsSync(path)) throw error
    rmSync(partial, { recursive: true, force: true }) // another process made it first
  }
  removeOthers(prefix, prefix + name)
  return path
}

async function makeImage(path: string, prepare: (db: Database) => Promise<unknown>): Promise<void> {
  const db = await openPglite(undefined)
  try {
    await prepare(db)
    await db.query(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`)
    await db.query('DROP DATABASE template0')
    await db.query('DROP DATABASE template1')
    await db.query('CHECKPOINT')
    await db.dumpTo(path)
  } finally {
    await db.close()
  }
}

const keyOf = (...parts: string[]) => createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 16)

function pgliteVersion(): string {
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'))
  const packageJson = join(entry.slice(0, entry.lastIndexOf('/dist/')), 'package.json')
  return JSON.parse(readFileSync(packageJson, 'utf8')).version
}

/** What an earlier version of PGlite or of the schema left is not used again. */
function removeOthers(prefix: string, kept: string): void {
  for (const name of readdirSync(tmpdir())) {
    if (name.startsWith(prefix) && name !== kept && !/\.\d+$/.test(name)) {
      rmSync(join(tmpdir(), name), { recursive: true, force: true })
    }
  }
}

/** A new data directory of the partner kit (its --data), whose database (in db/) is seeded; returned. */
export async function seededPartnerData(data: string): Promise<string> {
  await seedPgliteDataDir(join(data, 'db'))
  return data
}
