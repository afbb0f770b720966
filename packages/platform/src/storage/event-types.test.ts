import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { EVENT_TYPES } from '@earshot/protocol'
import { type Database, openPostgres } from '@earshot/support/storage'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { migrate, migrations } from './migrations.js'

/**
 * The event types the database accepts are the rows of its table event_types (sql/000023.sql), which must
 * be the protocol's EVENT_TYPES: an event type added to the protocol fails here until a migration inserts
 * its row. Deliveries reference the table by a foreign key, endpoints' event_types by a trigger.
 */

const FOREIGN_KEY_VIOLATION = '23503'
const CHECK_VIOLATION = '23514'

/** Rejects unless the database refused the statement with this SQLSTATE and a message matching `message`. */
async function refused(statement: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  await assert.rejects(statement, (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message)
    assert.match(error.message ?? '', message)
    return true
  })
}

for (const backend of testBackends) {
  describe(`${backend}: the event types the database accepts`, { timeout: 120_000 }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    before(async () => {
      if (backend === 'postgres') scratch = await scratchPostgresDatabase()
      db = scratch ? await openPostgres({ connectionString: scratch.url, max: 2 }) : await emptyPglite()
      // A delivery and an endpoint made before the table, checked against it by the migrations.
      await migrate(
        db,
        migrations.filter((m) => m.version <= 22),
      )
      await db.query(`INSERT INTO enterprises (enterprise_id, name) VALUES (1, 'A')`)
      await db.query(`INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
                      VALUES ('a-1', 1, 'd', 't', now(), 'https://cdn.example/a.mp3', 1)`)
      await db.query(
        `INSERT INTO endpoints (enterprise_id, url, event_types)
                      VALUES (1, 'https://a.example/push', $1)`,
        [EVENT_TYPES],
      )
      await db.query(`INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, state, due_at, endpoint_id)
                      VALUES ('e-1', 1, 'a-1', 'recording.audio_ready', 'pending', now(), 1)`)
      await migrate(db)
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    const newDelivery = (eventType: string) =>
      db.query(
        `INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, state, due_at, endpoint_id)
         VALUES (gen_random_uuid()::text, 1, 'a-1', $1, 'pending', now(), 1)`,
        [eventType],
      )
    const newEndpoint = (eventTypes: (string | null)[]) =>
      db.query(
        `INSERT INTO endpoints (enterprise_id, url, event_types) VALUES (1, 'https://b.example/push', $1)`,
        [eventTypes],
      )

    test("the table event_types holds exactly the protocol's EVENT_TYPES", async () => {
      const rows = await db.query<{ name: string }>('SELECT name FROM event_types ORDER BY name')
      assert.deepEqual(
        rows.map((row) => row.name),
        [...EVENT_TYPES].sort(),
        "event_types does not hold exactly protocol's EVENT_TYPES: add a migration inserting (or deleting) the row",
      )
    })

    test('no constraint or function of the schema spells out an event type any more', async () => {
      const spelled = await db.query<{ name: string }>(
        `SELECT conname::text AS name FROM pg_constraint
          WHERE connamespace = 'public'::regnamespace AND pg_get_constraintdef(oid) ~ '''recording\\.[a-z_]+'''
         UNION ALL
         SELECT proname::text FROM pg_proc
          WHERE pronamespace = 'public'::regnamespace AND prosrc ~ '''recording\\.[a-z_]+'''`,
      )
      assert.deepEqual(spelled, [])
    })

    test('the deliveries, those made before it too, are held to the table by a validated foreign key', async () => {
      const [fkey] = await db.query<{ definition: string; validated: boolean }>(
        `SELECT pg_get_constraintdef(oid) AS definition, convalidated AS validated FROM pg_constraint
          WHERE conname = 'deliveries_event_type_fkey'`,
      )
      assert.deepEqual(fkey, {
        definition: 'FOREIGN KEY (event_type) REFERENCES event_types(name)',
        validated: true,
      })
      await refused(newDelivery('recording.archived'), FOREIGN_KEY_VIOLATION, /deliveries_event_type_fkey/)
      await newDelivery('recording.updated')
    })

    test("an endpoint's event_types must all be in the table, when it is made and when they change", async () => {
      await refused(
        newEndpoint(['recording.audio_ready', 'recording.archived']),
        FOREIGN_KEY_VIOLATION,
        /endpoints\.event_types names 'recording\.archived' not in the table event_types/,
      )
      await refused(newEndpoint(['recording.audio_ready', null]), FOREIGN_KEY_VIOLATION, /names NULL/)
      await refused(newEndpoint([]), CHECK_VIOLATION, /endpoints_event_types_check/)
      await refused(
        db.query(`UPDATE endpoints SET event_types = event_types || 'archived'::text WHERE endpoint_id = 1`),
        FOREIGN_KEY_VIOLATION,
        /names 'archived' not in the table/,
      )
      await newEndpoint(['recording.deleted'])
    })

    test('an event type an endpoint names cannot be removed from the table', async () => {
      // recording.transcript_ready: named by endpoint 1 alone, no delivery has it.
      await refused(
        db.query(`DELETE FROM event_types WHERE name = 'recording.transcript_ready'`),
        FOREIGN_KEY_VIOLATION,
        /event type recording\.transcript_ready is named by an endpoint's event_types/,
      )
      await refused(
        db.query(
          `UPDATE event_types SET name = 'recording.text_ready' WHERE name = 'recording.transcript_ready'`,
        ),
        FOREIGN_KEY_VIOLATION,
        /is named by an endpoint's event_types/,
      )
      const removed = await db
        .transaction(async (tx) => {
          await tx.query(`UPDATE endpoints SET event_types = '{recording.audio_ready}' WHERE endpoint_id = 1`)
          const rows = await tx.query(
            `DELETE FROM event_types WHERE name = 'recording.transcript_ready' RETURNING 1`,
          )
          throw Object.assign(new Error('rolled back'), { rows })
        })
        .catch((error: { rows?: unknown[] }) => error.rows)
      assert.equal(removed?.length, 1, 'named by no endpoint nor delivery, it can go')
    })
  })
}
