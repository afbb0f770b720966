import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { rowsRead } from '@earshot/test-kit/table-reads'
import { deliveryQueue } from './delivery-store.js'

/*
 * What a claim and a sweep of the push queue cost does not grow with the number of enterprises and
 * endpoints on the platform: among 2,000 of each, they read the rows of the endpoints they claim for, not
 * every endpoint's (counted by the database itself, in the transaction: pg_stat_xact_user_tables).
 */

const TENANTS = 2000
const PENDING = 20

/** The tables a claim or a sweep could read whole. */
const TABLES = ['endpoints', 'enterprises', 'push_url_health'] as const

for (const backend of testBackends) {
  describe(`${backend}: a push claim among ${TENANTS} tenants`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let endpointId: number
    before(async () => {
      platform = await startTestPlatform(backend)
      const { db } = platform.context
      await db.query(`INSERT INTO enterprises (name) SELECT 'scale ' || g FROM generate_series(1, $1) g`, [
        TENANTS,
      ])
      const endpoints = await db.query<{ endpoint_id: number }>(
        `INSERT INTO endpoints (enterprise_id, url, event_types, max_per_second)
         SELECT enterprise_id, 'http://127.0.0.1:9/scale/' || enterprise_id, ARRAY['recording.audio_ready'],
                CASE WHEN enterprise_id % 10 = 0 THEN 5 END
           FROM enterprises WHERE name LIKE 'scale %' RETURNING endpoint_id`,
      )
      endpointId = Number(endpoints[0]?.endpoint_id)
      // Every URL pushed to before, with success: each has its health row.
      await db.query(
        `INSERT INTO push_url_health (url, last_success_at) SELECT url, now() FROM endpoints WHERE url LIKE '%/scale/%'`,
      )
      for (const table of ['enterprises', 'endpoints', 'push_url_health']) await db.query(`ANALYZE ${table}`)
    })
    after(async () => {
      await platform?.stop()
    })

    test('claims and sweeps read no endpoint or enterprise they do not claim for', async () => {
      let seen: { claims: number; before: Record<string, number>; after: Record<string, number> } | undefined
      const rolledBack = new Error('rolled back')
      const done = platform.context.db.transaction(async (tx) => {
        // Never committed: the platform's own dispatcher never sees them.
        await tx.query(
          `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
           SELECT 'scale-' || g, ep.enterprise_id, 'd', 't', now(), 'https://a/1.mp3', 1
             FROM generate_series(1, $2) g, endpoints ep WHERE ep.endpoint_id = $1`,
          [endpointId, PENDING],
        )
        await tx.query(
          `INSERT INTO deliveries (event_id, enterprise_id, endpoint_id, audio_id, event_type, due_at, group_key)
           SELECT 'scale-event-' || g, ep.enterprise_id, ep.endpoint_id, 'scale-' || g, 'recording.audio_ready',
                  now() - interval '1 second', ep.endpoint_id::text
             FROM generate_series(1, $2) g, endpoints ep WHERE ep.endpoint_id = $1`,
          [endpointId, PENDING],
        )
        const before = await rowsRead(tx, TABLES)
        const claims = await deliveryQueue.claim(tx, {
          claimant: 'scale-test',
          limit: PENDING,
          leaseSeconds: 60,
          perGroup: PENDING,
        })
        await deliveryQueue.sweep(tx, 100)
        seen = { claims: claims.length, before, after: await rowsRead(tx, TABLES) }
        throw rolledBack
      })
      await assert.rejects(done, rolledBack)
      assert.ok(seen)
      assert.equal(seen.claims, PENDING)
      for (const table of TABLES) {
        const read = (seen.after[table] ?? 0) - (seen.before[table] ?? 0)
        assert.ok(read < 100, `the claim and the sweep read ${read} rows of ${table}`)
      }
    })
  })
}
