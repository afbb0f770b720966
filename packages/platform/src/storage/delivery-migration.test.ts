import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ILLEGAL_TRANSITION_SQLSTATE } from '@earshot/support/queue'
import { type Database, openPostgres } from '@earshot/support/storage'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { type DeliveryState, deliveryMachine } from '../deliveries/delivery-states.js'
import { getDelivery } from '../deliveries/delivery-views.js'
import { migrate, migrations } from './migrations.js'

/** Migration 3 (deliveries as a fenced queue) over data written under migration 2, and its guard. */

for (const backend of testBackends) {
  describe(`${backend}: migration 3 and the delivery transition guard`, { timeout: 60_000 }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      db = scratch ? await openPostgres({ connectionString: scratch.url, max: 2 }) : await emptyPglite()
      // A database as migration 2 left it, with a delivery in flight and its attempts.
      await migrate(
        db,
        migrations.filter((m) => m.version <= 2),
      )
      await db.query(
        `INSERT INTO enterprises (enterprise_id, name, push_url) VALUES (7, 'Old', 'http://x/p')`,
      )
      await db.query(
        `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
         VALUES ('old-1', 7, 'd', 't', now(), 'https://a/1.mp3', 1)`,
      )
      await db.query(
        `INSERT INTO deliveries (delivery_id, event_id, enterprise_id, audio_id, event_type, state, due_at, attempt_count,
                                 failures, claimed_by)
         VALUES (1, 'e1', 7, 'old-1', 'recording.audio_ready', 'in_flight', now(), 2, 1, 'old-instance')`,
      )
      // Written out of order on purpose: the second attempt's row first.
      await db.query(
        `INSERT INTO delivery_attempts (delivery_id, attempt_no, started_at, duration_ms, outcome, error, claimed_by)
         VALUES (1, 2, '2026-03-01T02:00:00Z', 5, 'acked', NULL, 'old-instance'),
                (1, 1, '2026-03-01T01:00:00Z', 9, 'failed', 'HTTP 500', 'old-instance')`,
      )
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    test('deliveries and attempts written before it keep their claim numbers, order and states', async () => {
      assert.deepEqual(
        await migrate(db),
        migrations.filter((m) => m.version > 2).map((m) => m.version),
      )

      const [row] = await db.query(
        'SELECT state, claim_no, claimed_by, group_key, failures FROM deliveries WHERE delivery_id = 1',
      )
      assert.deepEqual(row, {
        state: 'in_flight',
        claim_no: 2,
        claimed_by: 'old-instance',
        // Grouped by the enterprise's push URL, its one endpoint since migration 17.
        group_key: String(
          (
            await db.query<{ endpoint_id: number }>(
              'SELECT endpoint_id FROM endpoints WHERE enterprise_id = 7',
            )
          )[0]?.endpoint_id,
        ),
        failures: 1,
      })
      const delivery = await getDelivery(db, 1)
      assert.deepEqual(
        delivery?.attempts.map((a) => [a.attemptNo, a.outcome, a.error]),
        [
          [1, 'failed', 'HTTP 500'],
          [2, 'acked', null],
        ],
      )
      const attempts = await db.query<{ attempt_id: number; stale: boolean }>(
        'SELECT attempt_id, stale FROM delivery_attempts ORDER BY attempt_id',
      )
      assert.equal(attempts.length, 2)
      assert.ok(attempts.every((a) => Number.isInteger(a.attempt_id) && a.stale === false))
    })

    test('the guard allows exactly the transitions of the table, and refuses every other change of state', async () => {
      const undue = [...deliveryMachine.parked, ...deliveryMachine.final]
      const dueAt = (state: DeliveryState) => (undue.includes(state) ? 'NULL' : 'now()')
      const move = (tx: { query: Database['query'] }, state: DeliveryState, id: number) =>
        tx.query(`UPDATE deliveries SET state = $1, due_at = ${dueAt(state)} WHERE delivery_id = $2`, [
          state,
          id,
        ])
      await migrate(db)
      await db.query(
        `INSERT INTO deliveries (delivery_id, event_id, enterprise_id, audio_id, event_type, due_at, group_key)
         VALUES (2, 'e2', 7, 'old-1', 'recording.transcript_ready', now(), '7')`,
      )
      const outcomes: string[] = []
      const expected: string[] = []
      for (const from of deliveryMachine.states) {
        for (const to of deliveryMachine.states) {
          if (from === to) continue
          expected.push(`${from} → ${to}: ${deliveryMachine.allows(from, to) ? 'allowed' : 'refused'}`)
          const outcome = await db
            .transaction(async (tx) => {
              const path = deliveryMachine.path('pending', from)
              // A state no transition leads to (queued) is one a delivery is created in.
              if (!path) {
                await tx.query(
                  `INSERT INTO deliveries (delivery_id, event_id, enterprise_id, audio_id, event_type, due_at, group_key, state)
                   VALUES (3, 'e3', 7, 'old-1', 'recording.updated', ${dueAt(from)}, '7', $1)`,
                  [from],
                )
              }
              for (const step of path ?? []) await move(tx, step, 2)
              await move(tx, to, path ? 2 : 3)
              throw new RolledBack()
            })
            .then(
              () => 'committed',
              (error: { code?: string }) =>
                error instanceof RolledBack
                  ? 'allowed'
                  : error.code === ILLEGAL_TRANSITION_SQLSTATE
                    ? 'refused'
                    : `failed: ${String(error)}`,
            )
          outcomes.push(`${from} → ${to}: ${outcome}`)
        }
      }
      assert.deepEqual(outcomes, expected)
      assert.ok(expected.filter((line) => line.endsWith('allowed')).length >= 10)
    })
  })
}

class RolledBack extends Error {}
