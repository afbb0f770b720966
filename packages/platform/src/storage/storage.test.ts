import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Database, LockHeldError, openPglite } from '@earshot/support/storage'
import {
  type BackendName,
  type ScratchDatabase,
  scratchPostgresDatabase,
  testBackends,
} from '@earshot/test-kit/backends'
import { migrate, migrations } from './migrations.js'
import { openDatabase } from './open-database.js'

async function open(backend: BackendName, scratch: ScratchDatabase | undefined): Promise<Database> {
  return openDatabase(backend === 'postgres' ? { databaseUrl: scratch?.url } : {})
}

for (const backend of testBackends) {
  describe(`${backend} storage`, { timeout: 120_000 }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      db = await open(backend, scratch)
    })
    after(async () => {
      await db.close()
      await scratch?.drop()
    })

    test('every migration is applied once, in order, and applying again does nothing', async () => {
      const rows = await db.query<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
      )
      assert.deepEqual(
        rows.map((row) => row.version),
        migrations.map((migration) => migration.version),
      )
      assert.deepEqual(await migrate(db), [])
    })

    test('a transaction commits on success and rolls back on a throw', async () => {
      await db.transaction((tx) =>
        tx.query(`INSERT INTO platform_settings (name, value) VALUES ('kept', '1')`),
      )
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.query(`INSERT INTO platform_settings (name, value) VALUES ('dropped', '1')`)
          throw new Error('abort')
        }),
        /abort/,
      )
      const names = await db.query<{ name: string }>(
        `SELECT name FROM platform_settings WHERE name IN ('kept', 'dropped')`,
      )
      assert.deepEqual(
        names.map((row) => row.name),
        ['kept'],
      )
    })

    test('int8 values arrive as numbers', async () => {
      const [row] = await db.query<{ n: unknown; big: unknown }>(
        'SELECT count(*) AS n, 9007199254740991::int8 AS big',
      )
      assert.equal(row?.n, 1)
      assert.equal(row?.big, Number.MAX_SAFE_INTEGER)
    })

    if (backend === 'postgres') {
      test('instances migrating one database at once all succeed, and it is migrated once', async () => {
        const fresh = await scratchPostgresDatabase()
        try {
          const opened = await Promise.all([1, 2, 3].map(() => openDatabase({ databaseUrl: fresh.url })))
          const [count] = await (opened[0] as Database).query<{ n: number }>(
            'SELECT count(*) AS n FROM schema_migrations',
          )
          assert.equal(count?.n, migrations.length)
          await Promise.all(opened.map((one) => one.close()))
        } finally {
          await fresh.drop()
        }
      })
    }
  })
}

describe('embedded data directory lock', { timeout: 120_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'earshot-lock-'))
  const dataDir = join(directory, 'data')
  after(() => rmSync(directory, { recursive: true, force: true }))

  test('a second open of a held data directory is refused with a message naming it', async () => {
    const db = await openPglite(dataDir)
    try {
      await assert.rejects(openPglite(dataDir), (error: unknown) => {
        assert.ok(error instanceof LockHeldError)
        assert.match(
          error.message,
          new RegExp(
            `the data directory ${dataDir} is in use by another Earshot process \\(pid ${process.pid}\\)`,
          ),
        )
        return true
      })
    } finally {
      await db.close()
    }
    assert.equal(existsSync(`${dataDir}.lock`), false, 'close releases the lock')
  })

  test('another process is refused while the directory is held', async () => {
    const db = await openPglite(dataDir)
    try {
      const module = import.meta.resolve('@earshot/support/storage')
      const child = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import(${JSON.stringify(module)}).then((m) => m.openPglite(${JSON.stringify(dataDir)}))`,
        ],
        { encoding: 'utf8' },
      )
      assert.notEqual(child.status, 0)
      assert.match(child.stderr, /is in use by another Earshot process/)
    } finally {
      await db.close()
    }
  })

  test('a lock left by a process that no longer runs is taken over', async () => {
    const deadPid = Number(
      execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
        encoding: 'utf8',
      }),
    )
    writeFileSync(`${dataDir}.lock`, String(deadPid))
    const db = await openPglite(dataDir)
    await db.close()
  })
})
