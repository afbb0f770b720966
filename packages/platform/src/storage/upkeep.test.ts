import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import type { Database } from './database.js'
import { openDatabase } from './open-database.js'
import { needsUpkeep, tendDatabase } from './upkeep.js'

/** The platform's own vacuum and analyze, where no autovacuum does them. */

for (const backend of testBackends) {
  describe(`${backend}: database upkeep`, { timeout: 60_000 }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      db = await openDatabase(scratch ? { databaseUrl: scratch.url, poolSize: 2 } : {})
      await tendDatabase(db) // what the migrations left
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    test('needed on the embedded database, and on PostgreSQL when its autovacuum is off', async () => {
      const [setting] = await db.query<{ on: string }>("SELECT current_setting('autovacuum') AS on")
      assert.equal(await needsUpkeep(db), backend === 'pglite' || setting?.on === 'off')
    })

    test('a table whose dead rows passed 1,000 and 5% of its live ones is vacuumed; then nothing is left to do', async () => {
      await db.query(
        `INSERT INTO replay_nonces (enterprise_id, key_version, nonce, expires_at)
         SELECT 1, 1, decode(lpad(to_hex(g), 24, '0'), 'hex'), now() - interval '1 hour' FROM generate_series(1, 3000) g`,
      )
      await db.query('DELETE FROM replay_nonces')
      const steps = await tendDatabase(db)
      assert.ok(
        steps.some((step) => step.table === 'replay_nonces' && step.statement.startsWith('VACUUM')),
        JSON.stringify(steps),
      )
      assert.deepEqual(await tendDatabase(db), [])
    })

    if (backend === 'postgres') {
      test('on PostgreSQL a VACUUM pauses as autovacuum does, and its connection keeps no setting of it', async () => {
        // One connection: the pass sees the statistics of the rows it deleted (a backend sends its own at
        // the end of a transaction, at most once a second unless asked), and the settings read after the
        // pass are those of the connection it used.
        const tender = await openDatabase({ databaseUrl: scratch?.url as string, poolSize: 1 })
        try {
          await tender.query(
            `INSERT INTO replay_nonces (enterprise_id, key_version, nonce, expires_at)
             SELECT 1, 1, decode(lpad(to_hex(g), 24, '0'), 'hex'), now() FROM generate_series(1, 100000) g`,
          )
          await tender.query('DELETE FROM replay_nonces')
          const [connection] = await tender.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
          let ended = false
          const pass = tendDatabase(tender).finally(() => {
            ended = true
          })
          let paused = false
          while (!paused && !ended) {
            const [row] = await db.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'VacuumDelay'",
              [connection?.pid],
            )
            paused = (row?.n ?? 0) > 0
          }
          const steps = await pass
          assert.ok(paused, `no VacuumDelay wait seen during ${JSON.stringify(steps)}`)
          const settings = await tender.query<{ name: string; setting: string; reset_val: string }>(
            "SELECT name, setting, reset_val FROM pg_settings WHERE name IN ('vacuum_cost_delay', 'vacuum_cost_limit')",
          )
          assert.equal(settings.length, 2)
          for (const { name, setting, reset_val } of settings) assert.equal(setting, reset_val, name)
        } finally {
          await tender.close()
        }
      })

      test('on PostgreSQL one instance tends at a time: another holding the lock, a pass does nothing', async () => {
        await db.query('INSERT INTO enterprises (name) SELECT $1 || g FROM generate_series(1, 2000) g', [
          'many ',
        ])
        const other = await openDatabase({ databaseUrl: scratch?.url as string, poolSize: 1 })
        try {
          await other.session(async (session) => {
            await session.query('SELECT pg_advisory_lock($1)', [0x7570_6b70])
            assert.deepEqual(await tendDatabase(db), [])
            await session.query('SELECT pg_advisory_unlock($1)', [0x7570_6b70])
          })
        } finally {
          await other.close()
        }
        const steps = await tendDatabase(db)
        assert.ok(
          steps.some((step) => step.table === 'enterprises'),
          JSON.stringify(steps),
        )
      })
    }
  })
}
