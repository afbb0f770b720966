import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Database, openPostgres } from '@earshot/support/storage'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { deliveryMachine } from '../deliveries/delivery-states.js'
import { migrate, migrations, parseMigration, SchemaMismatchError } from './migrations.js'

/**
 * Migrations are frozen SQL: a database made at once and one upgraded from the last release's schema (with
 * rows in it) end with the same schema, and the latest state lists in SQL are the delivery machine's.
 */

/** Every object of the public schema as the catalogs describe it, one sorted line each. */
async function schemaOf(db: Database): Promise<string[]> {
  const rows = await db.query<{ line: string }>(`
    SELECT format('column %s.%s %s %s %s', c.table_name, c.column_name, c.data_type, c.is_nullable,
                  coalesce(c.column_default, '')) AS line
      FROM information_schema.columns c WHERE c.table_schema = 'public'
    UNION ALL
    SELECT format('constraint %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL
    SELECT format('function %s %s', p.proname, md5(p.prosrc)) FROM pg_proc p
     WHERE p.pronamespace = 'public'::regnamespace
    UNION ALL
    SELECT format('trigger %s', pg_get_triggerdef(oid)) FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL
    SELECT format('statistics %s.%s %s', attrelid::regclass, attname, attstattarget) FROM pg_attribute
     WHERE attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r')
       AND attnum > 0 AND NOT attisdropped AND attstattarget IS NOT NULL AND attstattarget >= 0`)
  return rows.map((row) => row.line).sort()
}

/** The quoted names of a catalog definition: `'pending'::text` → pending. */
const quotedNames = (definition: string) => [...definition.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]).sort()

for (const backend of testBackends) {
  describe(`${backend}: frozen migrations`, { timeout: 120_000 }, () => {
    const scratches: ScratchDatabase[] = []
    let fresh: Database
    let upgraded: Database
    const open = async () => {
      if (backend === 'pglite') return emptyPglite()
      const scratch = await scratchPostgresDatabase()
      scratches.push(scratch)
      return openPostgres({ connectionString: scratch.url, max: 2 })
    }
    before(async () => {
      fresh = await open()
      await migrate(fresh)
      upgraded = await open()
      await migrate(
        upgraded,
        migrations.filter((m) => m.version <= 12),
      )
      await upgraded.query(
        `INSERT INTO enterprises (enterprise_id, name, push_url) VALUES (1, 'A', 'https://a.example')`,
      )
      await upgraded.query(
        `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
         VALUES ('a-1', 1, 'd', 't', now(), 'https://cdn.example/a.mp3', 1)`,
      )
      await migrate(upgraded)
    })
    after(async () => {
      await fresh?.close()
      await upgraded?.close()
      for (const scratch of scratches) await scratch.drop()
    })

    test('a database made at once and one upgraded from the last release have the same schema', async () => {
      const [made, grown] = [await schemaOf(fresh), await schemaOf(upgraded)]
      assert.ok(made.length > 100, `the catalogs describe the schema (${made.length} lines)`)
      assert.deepEqual(grown, made)
    })

    test("the deliveries' state check, due check and transition guard are the delivery machine's", async () => {
      const constraint = async (name: string) =>
        (
          await fresh.query<{ definition: string }>(
            `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conname = $1`,
            [name],
          )
        )[0]?.definition ?? ''
      assert.deepEqual(
        quotedNames(await constraint('deliveries_state_check')),
        [...deliveryMachine.states].sort(),
      )
      assert.deepEqual(
        quotedNames(await constraint('deliveries_due_check')),
        [...deliveryMachine.parked, ...deliveryMachine.final].sort(),
      )
      const [guard] = await fresh.query<{ source: string }>(
        `SELECT prosrc AS source FROM pg_proc WHERE proname = 'deliveries_transition_guard'`,
      )
      const pairs = /'\{([^}]*)\}'/.exec(guard?.source ?? '')?.[1]?.split(',') ?? []
      const allowed = deliveryMachine.states.flatMap((from) =>
        deliveryMachine.states.filter((to) => deliveryMachine.allows(from, to)).map((to) => `${from}>${to}`),
      )
      assert.deepEqual(pairs.sort(), allowed.sort())
      const indexes = await fresh.query<{ name: string; definition: string }>(
        `SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE tablename = 'deliveries'`,
      )
      const index = (name: string) => indexes.find((row) => row.name === name)?.definition ?? ''
      assert.match(index('deliveries_sweepable'), /WHERE/)
      assert.deepEqual(
        quotedNames(index('deliveries_sweepable').split('WHERE')[1] ?? ''),
        [deliveryMachine.claimed, ...deliveryMachine.waiting].sort(),
      )
      // Claims read the due index, which holds the ready deliveries alone; paused groups are found by the others.
      assert.deepEqual(quotedNames(index('deliveries_due')), [deliveryMachine.ready])
      assert.deepEqual(quotedNames(index('deliveries_held')), [deliveryMachine.held])
      assert.deepEqual(quotedNames(index('deliveries_ready_by_group')), [deliveryMachine.ready])
    })
  })
}

for (const backend of testBackends) {
  describe(`${backend}: what a database applied is checked against the files`, { timeout: 120_000 }, () => {
    const scratches: ScratchDatabase[] = []
    const databases: Database[] = []
    const open = async () => {
      if (backend === 'pglite') databases.push(await emptyPglite())
      else {
        const scratch = await scratchPostgresDatabase()
        scratches.push(scratch)
        databases.push(await openPostgres({ connectionString: scratch.url, max: 2 }))
      }
      return databases.at(-1) as Database
    }
    after(async () => {
      for (const db of databases) await db.close()
      for (const scratch of scratches) await scratch.drop()
    })
    const first = parseMigration(1, '-- one\nCREATE TABLE t1 (a integer);\n')
    const second = parseMigration(2, '-- two\nCREATE TABLE t2 (a integer);\n')
    const firstEdited = parseMigration(1, '-- one\nCREATE TABLE t1 (a bigint);\n')

    test('a database migrated further than this code knows is refused, and nothing is applied', async () => {
      const db = await open()
      await migrate(db, [first, second])
      await assert.rejects(
        migrate(db, [first]),
        (error: unknown) =>
          error instanceof SchemaMismatchError &&
          /schema is at migration 2 \("two"\), newer than this Earshot, which knows migrations up to 1/.test(
            error.message,
          ),
      )
    })

    test('a migration applied from another text than its file now holds is refused by name', async () => {
      const db = await open()
      await migrate(db, [first])
      await assert.rejects(
        migrate(db, [firstEdited, second]),
        (error: unknown) =>
          error instanceof SchemaMismatchError &&
          /migration 1 \("one"\) was applied from another text than sql\/000001\.sql/.test(error.message),
      )
      const tables = await db.query(`SELECT 1 FROM pg_tables WHERE tablename = 't2'`)
      assert.equal(tables.length, 0, 'the next migration was not applied')
    })

    test("a migration applied before checksums were kept gets its file's, and is checked from then on", async () => {
      const db = await open()
      await migrate(db, [first])
      await db.query('UPDATE schema_migrations SET checksum = NULL')
      assert.deepEqual(await migrate(db, [first, second]), [2])
      const rows = await db.query<{ checksum: string }>(
        'SELECT checksum FROM schema_migrations ORDER BY version',
      )
      assert.deepEqual(
        rows.map((row) => row.checksum),
        [first.checksum, second.checksum],
      )
      await assert.rejects(migrate(db, [firstEdited, second]), SchemaMismatchError)
    })
  })
}

test('a migration file is split as PostgreSQL reads it: quotes and $$ bodies keep their semicolons', {
  timeout: 10_000,
}, () => {
  const migration = parseMigration(
    7,
    `-- a name\n\nCREATE TABLE t (x text DEFAULT 'a;b');\n\nCREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$\nBEGIN\n  RETURN 1;\nEND\n$$;\n`,
  )
  assert.equal(migration.name, 'a name')
  assert.equal(migration.statements.length, 2)
  assert.match(migration.statements[1] ?? '', /RETURN 1;\nEND\n\$\$$/)
  assert.throws(() => parseMigration(8, 'CREATE TABLE t ()'), /does not begin with a line "-- its name"/)
})
