import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { type Database, openPostgres } from '@earshot/support/storage'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { migrate, migrations } from './migrations.js'

/** Migration 17: each enterprise's push URL becomes its one endpoint, and its open deliveries go with it. */

for (const backend of testBackends) {
  describe(`${backend}: push URLs become endpoints`, { timeout: 60_000 }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    before(async () => {
      if (backend === 'postgres') scratch = await scratchPostgresDatabase()
      db = scratch ? await openPostgres({ connectionString: scratch.url, max: 2 }) : await emptyPglite()
      await migrate(
        db,
        migrations.filter((m) => m.version <= 16),
      )
      await db.query(`INSERT INTO enterprises (enterprise_id, name, push_url)
                      VALUES (1, 'with', 'https://a.example/push'), (2, 'without', NULL)`)
      await db.query(`INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
                      VALUES ('a-1', 1, 'd', 't', now(), 'https://cdn.example/a.mp3', 1),
                             ('b-1', 2, 'd', 't', now(), 'https://cdn.example/b.mp3', 1)`)
      await db.query(`INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, state, due_at, group_key)
                      VALUES ('e-a', 1, 'a-1', 'recording.audio_ready', 'pending', now(), '1'),
                             ('e-b', 2, 'b-1', 'recording.audio_ready', 'pending', now(), '2')`)
      await migrate(db)
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    test('the push URL is an endpoint for every event type; open deliveries are grouped by it', async () => {
      const endpoints = await db.query<{
        endpoint_id: number
        enterprise_id: number
        url: string
        event_types: string[]
      }>('SELECT endpoint_id::int, enterprise_id::int, url, event_types FROM endpoints ORDER BY endpoint_id')
      assert.equal(endpoints.length, 1)
      const [endpoint] = endpoints
      assert.equal(endpoint?.enterprise_id, 1)
      assert.equal(endpoint?.url, 'https://a.example/push')
      assert.deepEqual([...(endpoint?.event_types ?? [])].sort(), Object.values(PushEventType).sort())
      const deliveries = await db.query<{
        event_id: string
        endpoint_id: number | null
        group_key: string | null
      }>('SELECT event_id, endpoint_id::int, group_key FROM deliveries ORDER BY event_id')
      assert.deepEqual(deliveries, [
        { event_id: 'e-a', endpoint_id: endpoint?.endpoint_id, group_key: String(endpoint?.endpoint_id) },
        // An enterprise without a push URL: no endpoint, no group; its delivery fails as it did.
        { event_id: 'e-b', endpoint_id: null, group_key: null },
      ])
      const columns = await db.query(
        "SELECT 1 FROM information_schema.columns WHERE table_name = 'enterprises' AND column_name = 'push_url'",
      )
      assert.equal(columns.length, 0, 'the push URL has one home: the endpoints')
    })
  })
}
