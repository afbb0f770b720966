import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { eventually } from '@earshot/test-kit/eventually'
import type { Database } from './database.js'
import { openPostgres } from './postgres.js'

if (testBackends.includes('postgres')) {
  describe('postgres: a connection lost while checked out', { timeout: 60_000 }, () => {
    let scratch: ScratchDatabase
    let db: Database
    before(async () => {
      scratch = await scratchPostgresDatabase()
      db = await openPostgres({ connectionString: scratch.url, max: 4 })
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    const backendGone = (pid: number) =>
      eventually(
        async () => (await db.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).length === 0,
        10_000,
        `backend ${pid} gone`,
      )

    for (const use of ['transaction', 'session'] as const) {
      test(`between two statements of a ${use}: the next statement fails, the process goes on`, async () => {
        await assert.rejects(
          db[use](async (q) => {
            const [row] = await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
            const pid = Number(row?.pid)
            await db.query('SELECT pg_terminate_backend($1)', [pid])
            await backendGone(pid)
            await q.query('SELECT 1')
          }),
        )
        assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }])
      })
    }
  })
}
