import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { rename } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PlatformConfig } from '@earshot/platform'
import { migrate, migrations } from '@earshot/platform/internal'
import { openPglite } from '@earshot/support/storage'

/**
 * A test platform's in-memory PGlite starts as a copy of one already migrated: about 0.4 s instead of
 * about 3 s of initdb and migrations. The copy is made once for each version of the schema and of
 * PGlite and kept in the system temporary directory, for every later test process; a process that finds
 * none makes it (two at once each write their own file and rename it into place).
 */

const PREFIX = 'earshot-pglite-image-'
let image: Promise<string> | undefined

function migratedPgliteImage(): Promise<string> {
  image ??= existingOrNew()
  return image
}

/** The image for a platform configured with an in-memory database; none for any other storage. */
export async function migratedPgliteImageFor(
  config: Pick<PlatformConfig, 'databaseUrl' | 'dataDir'>,
): Promise<string | undefined> {
  const inMemory = config.databaseUrl === undefined && config.dataDir === 'memory://'
  return inMemory ? migratedPgliteImage() : undefined
}

async function existingOrNew(): Promise<string> {
  const key = createHash('sha256').update(pgliteVersion()).update(JSON.stringify(migrations)).digest('hex')
  const file = join(tmpdir(), `${PREFIX}${key.slice(0, 16)}.tar`)
  if (existsSync(file)) return file
  const partial = `${file}.${process.pid}`
  const db = await openPglite(undefined)
  try {
    await migrate(db)
    await db.dumpTo(partial)
  } finally {
    await db.close()
  }
  await rename(partial, file)
  removeOtherImages(file)
  return file
}

function pgliteVersion(): string {
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'))
  const packageJson = join(entry.slice(0, entry.lastIndexOf('/dist/')), 'package.json')
  return JSON.parse(readFileSync(packageJson, 'utf8')).version
}

/** Images of an earlier schema are not used again. */
function removeOtherImages(kept: string): void {
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name)
    if (name.startsWith(PREFIX) && name.endsWith('.tar') && path !== kept) rmSync(path, { force: true })
  }
}
