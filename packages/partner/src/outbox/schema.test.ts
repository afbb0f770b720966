import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { eventually } from '@earshot/test-kit/eventually'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { silentLogger } from '../logging/receiver-logger.js'
import { type Database, openDatabase } from '../storage/database.js'
import { openCallbackOutbox } from './callback-outbox.js'

/** The kit's first layout (0.1.0), as a receiver of that version left it. */
const firstLayout = [
  `CREATE TABLE earshot_received_events (
    event_id text PRIMARY KEY, audio_id text NOT NULL, event_type text NOT NULL, received_at timestamptz NOT NULL)`,
  `CREATE TABLE earshot_seen_nonces (
    key_version integer NOT NULL, nonce text NOT NULL, expires_at timestamptz NOT NULL,
    PRIMARY KEY (key_version, nonce))`,
  `CREATE TABLE earshot_receipt_callbacks (
    event_id text PRIMARY KEY REFERENCES earshot_received_events, audio_id text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'confirmed', 'failed')),
    attempts integer NOT NULL DEFAULT 0, next_attempt_at timestamptz, last_error text, done_at timestamptz)`,
  `CREATE INDEX earshot_receipt_callbacks_due ON earshot_receipt_callbacks (next_attempt_at)
     WHERE state = 'pending'`,
  `INSERT INTO earshot_received_events VALUES
     ('evt-pending', 'audio-pending', 'recording.audio_ready', now()),
     ('evt-confirmed', 'audio-confirmed', 'recording.transcript_ready', now()),
     ('evt-failed', 'audio-failed', 'recording.audio_ready', now())`,
  `INSERT INTO earshot_receipt_callbacks (event_id, audio_id, state, attempts, next_attempt_at, last_error, done_at)
   VALUES ('evt-pending', 'audio-pending', 'pending', 2, now() + interval '1 hour', 'platform down', NULL),
          ('evt-confirmed', 'audio-confirmed', 'confirmed', 1, NULL, NULL, now()),
          ('evt-failed', 'audio-failed', 'failed', 1, NULL, 'refused with 4040', now())`,
]

for (const backend of testBackends)
  describe(`outbox schema upgrade on ${backend}`, { timeout: 60_000 }, () => {
    test('a store of the first layout keeps every event; its pending callback is sent at once', async () => {
      const scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      const db: Database = await (scratch ? openDatabase({ databaseUrl: scratch.url }) : emptyPglite())
      try {
        for (const sql of firstLayout) await db.query(sql)
        const sent: string[] = []
        const outbox = await openCallbackOutbox({
          database: db,
          log: silentLogger,
          confirm: async (audioId) => {
            sent.push(audioId)
          },
        })
        try {
          await eventually(
            async () => (await outbox.callbacks({ audioId: 'audio-pending' }))[0]?.state === 'confirmed',
            10_000,
            'the carried-over pending callback confirmed',
          )
          assert.deepEqual(sent, ['audio-pending'])
          const states = (await outbox.callbacks()).map((c) => [c.eventId, c.eventType, c.state, c.attempts])
          assert.deepEqual(
            states.sort(([a], [b]) => String(a).localeCompare(String(b))),
            [
              ['evt-confirmed', 'recording.transcript_ready', 'confirmed', 1],
              ['evt-failed', 'recording.audio_ready', 'failed', 1],
              ['evt-pending', 'recording.audio_ready', 'confirmed', 3],
            ],
          )
          // The carried-over events are still known: a repeat of one is a duplicate.
          assert.equal(
            await outbox.admit({ keyVersion: 1, nonce: 'fresh', eventId: 'evt-confirmed' }),
            'duplicate',
          )
        } finally {
          await outbox.close()
        }
      } finally {
        await db.close()
        await scratch?.drop()
      }
    })

    test('a store made before the erased flag opens; its callbacks of deletions confirm erasures', async () => {
      const scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      const db: Database = await (scratch ? openDatabase({ databaseUrl: scratch.url }) : emptyPglite())
      try {
        // The layout this change started from: today's, without the column.
        await (await openCallbackOutbox({ database: db, log: silentLogger, confirm: async () => {} })).close()
        await db.query('ALTER TABLE earshot_receipt_callbacks DROP COLUMN erased')
        await db.query(
          `INSERT INTO earshot_receipt_callbacks (event_id, audio_id, event_type, received_at, state, due_at)
           VALUES ('evt-receipt', 'audio-old', 'recording.audio_ready', now(), 'pending', now()),
                  ('evt-deleted', 'audio-old', 'recording.deleted', now(), 'pending', now()),
                  ('evt-check', 'check_run_deleted', 'recording.deleted', now(), 'pending', now())`,
        )
        const sent: string[] = []
        const outbox = await openCallbackOutbox({
          database: db,
          log: silentLogger,
          confirm: async (audioId, { erased }) => void sent.push(`${audioId} erased=${erased}`),
        })
        try {
          await eventually(
            async () => (await outbox.callbacks({ state: 'confirmed' })).length === 3,
            10_000,
            'the three callbacks confirmed',
          )
          assert.deepEqual(sent.sort(), [
            'audio-old erased=false',
            'audio-old erased=true',
            'check_run_deleted erased=false',
          ])
          const erased = (await outbox.callbacks()).map((c) => [c.eventId, c.erased])
          assert.deepEqual(
            erased.sort(([a], [b]) => String(a).localeCompare(String(b))),
            [
              ['evt-check', false],
              ['evt-deleted', true],
              ['evt-receipt', false],
            ],
          )
        } finally {
          await outbox.close()
        }
      } finally {
        await db.close()
        await scratch?.drop()
      }
    })
  })
