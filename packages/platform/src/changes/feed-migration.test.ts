import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Database, openPostgres } from '@earshot/support/storage'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { eventually } from '@earshot/test-kit/eventually'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { migrate, migrations } from '../storage/migrations.js'
import { readChanges } from './change-feed.js'

/**
 * Migration 14 numbers each enterprise's changes apart. A cursor given before it (a seq of the global
 * numbering) resumes after it with no change skipped and none repeated, changes not yet numbered at the
 * migration included; a global seq of another enterprise's change is not a cursor of this one.
 */

const legacyCursor = (seq: number) => Buffer.from(`1:${seq}`).toString('base64url')

for (const backend of testBackends) {
  describe(`${backend}: per-enterprise change numbering over a feed numbered before it`, {
    timeout: 60_000,
  }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    /** Global seqs of A's and B's changes, as numbered before migration 14. */
    let globalA: number[]
    let globalB: number[]
    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      db = scratch ? await openPostgres({ connectionString: scratch.url, max: 2 }) : await emptyPglite()
      await migrate(
        db,
        migrations.filter((m) => m.version <= 13),
      )
      await db.query(`INSERT INTO enterprises (enterprise_id, name) VALUES (1, 'A'), (2, 'B')`)
      const store = (enterprise: number, audioId: string) =>
        db.query(
          `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
           VALUES ($1, $2, 'd', $1, now(), 'https://cdn.example/a.mp3', 1)`,
          [audioId, enterprise],
        )
      // Interleaved: A's global seqs have gaps where B's changes are.
      for (let i = 1; i <= 5; i++) {
        await store(1, `a-${i}`)
        await store(2, `b-${i}`)
      }
      await db.query(`UPDATE recordings SET title = 'renamed' WHERE audio_id = 'a-2'`)
      // Numbering takes only changes older than the server's oldest running transaction, which may be
      // another database's (a suite running beside this one): number until every change has its seq.
      await eventually(
        async () => {
          await db.query('SELECT number_recording_changes(10000)')
          const [left] = await db.query<{ n: number }>(
            'SELECT count(*) AS n FROM recording_changes WHERE seq IS NULL',
          )
          return Number(left?.n) === 0
        },
        30_000,
        'every change numbered before the migration',
      )
      const numbered = await db.query<{ enterprise_id: number; seq: number }>(
        'SELECT enterprise_id, seq FROM recording_changes ORDER BY seq',
      )
      globalA = numbered.filter((row) => row.enterprise_id === 1).map((row) => row.seq)
      globalB = numbered.filter((row) => row.enterprise_id === 2).map((row) => row.seq)
      // Changed after the last read: not numbered when the migration runs.
      await store(1, 'a-6')
      await db.query(`DELETE FROM recordings WHERE audio_id = 'a-1'`)
      await migrate(db)
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    const all = async (enterprise: number, cursor: string | undefined) => {
      const page = await readChanges(db, enterprise, { cursor, size: 100 })
      return page.items.map((item) => [item.seq, item.audioId, item.change])
    }

    test("each enterprise's changes are numbered 1..n, in the order they had", async () => {
      assert.deepEqual(await all(1, undefined), [
        [1, 'a-1', 'created'],
        [2, 'a-2', 'created'],
        [3, 'a-3', 'created'],
        [4, 'a-4', 'created'],
        [5, 'a-5', 'created'],
        [6, 'a-2', 'updated'],
        [7, 'a-6', 'created'],
        [8, 'a-1', 'deleted'],
      ])
      assert.deepEqual(
        (await all(2, undefined)).map(([seq]) => seq),
        [1, 2, 3, 4, 5],
      )
    })

    test('a cursor given before resumes after the change it named: nothing skipped, nothing repeated', async () => {
      assert.equal(globalA.length, 6)
      for (const [read, global] of globalA.entries()) {
        const resumed = await all(1, legacyCursor(global))
        assert.deepEqual(
          resumed.map(([seq]) => seq),
          [2, 3, 4, 5, 6, 7, 8].slice(read),
          `after A's change ${read + 1} (global seq ${global})`,
        )
      }
      assert.equal((await all(1, legacyCursor(0))).length, 8, 'the start')
      const page = await readChanges(db, 1, { cursor: legacyCursor(globalA[5] as number), size: 100 })
      assert.equal(Buffer.from(page.nextCursor, 'base64url').toString(), '2:8')
    })

    test("another enterprise's seq, or one never given, is not a cursor of this one", async () => {
      for (const seq of [globalB[0] as number, 999]) {
        await assert.rejects(readChanges(db, 1, { cursor: legacyCursor(seq), size: 10 }), /cursor/)
      }
    })
  })
}
