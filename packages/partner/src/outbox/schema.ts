import { CHECK_AUDIO_ID_PREFIX, PushEventType } from '@earshot/protocol'
import { dueCheckSql, stateCheckSql, sweepIndexSql } from '@earshot/support/queue'
import type { Database } from '../storage/database.js'
import { callbackMachine, callbackQueue } from './outbox-store.js'

/*
 * The receiver's tables. Prefixed `earshot_` so they can live in a database the partner's own
 * application uses too. Created if missing; a later change to them is a new statement added here.
 */
const statements = [
  // Envelope nonces accepted within the replay window; a row past expires_at counts as unseen.
  `CREATE TABLE IF NOT EXISTS earshot_seen_nonces (
    key_version integer NOT NULL,
    nonce text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (key_version, nonce)
  )`,
  // One row per eventId ever accepted (kept: the dedup record), with its receipt callback, a job of
  // callbackQueue (outbox-store.ts). due_at is when the queue next acts on it (attempt it when pending,
  // take it back when its claim's lease ends when in_flight; NULL once confirmed or failed). claim_no
  // counts claims and fences results. failures: failed attempts in a row. attempts and last_error: of
  // the attempts that moved it. rearmed_at: when a repeated event last asked for the callback again.
  // erased: the callback confirms the erasure of a deleted recording (sent with `erased: true`).
  `CREATE TABLE IF NOT EXISTS earshot_receipt_callbacks (
    event_id text PRIMARY KEY,
    audio_id text NOT NULL,
    event_type text NOT NULL,
    erased boolean NOT NULL DEFAULT false,
    received_at timestamptz NOT NULL,
    state text NOT NULL CHECK (${stateCheckSql(callbackMachine)}),
    due_at timestamptz,
    claim_no integer NOT NULL DEFAULT 0,
    claimed_by text,
    claimed_at timestamptz,
    group_key text,
    failures integer NOT NULL DEFAULT 0,
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    rearmed_at timestamptz,
    done_at timestamptz,
    CHECK (${dueCheckSql(callbackMachine)})
  )`,
  `CREATE INDEX IF NOT EXISTS earshot_receipt_callbacks_due
     ON earshot_receipt_callbacks (due_at) WHERE due_at IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS earshot_receipt_callbacks_sweepable
     ON earshot_receipt_callbacks ${sweepIndexSql(callbackMachine)}`,
  // The events received, as they were before they shared a row with their callbacks.
  `CREATE OR REPLACE VIEW earshot_received_events AS
     SELECT event_id, audio_id, event_type, received_at FROM earshot_receipt_callbacks`,
  // Every attempt, numbered by attempt_id and never overwritten; one made under a claim no longer
  // current is `stale` (it moved nothing). `aborted`: cut off by close(). A log: nothing reads it on
  // the way of a push, so it has no index but its key.
  `CREATE TABLE IF NOT EXISTS earshot_receipt_callback_attempts (
    attempt_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL,
    claim_no integer NOT NULL,
    claimed_by text NOT NULL,
    started_at timestamptz NOT NULL,
    duration_ms integer NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'aborted')),
    error text,
    stale boolean NOT NULL,
    next_attempt_at timestamptz
  )`,
  // BRIN: nonces arrive in expiry order, and the index costs next to nothing per push.
  'CREATE INDEX IF NOT EXISTS earshot_seen_nonces_expiry ON earshot_seen_nonces USING brin (expires_at)',
  // The trigger refusing any change of state the machine does not allow.
  ...callbackQueue.guardSql(),
]

/*
 * The kit's first layout (0.1.0) kept events and callbacks in two tables. Its rows are carried over,
 * each pending callback due now, so that no callback recorded before the upgrade is lost.
 */
const fromFirstLayout = {
  detect: `SELECT 1 FROM pg_class WHERE oid = to_regclass('earshot_received_events') AND relkind = 'r'`,
  before: [
    `CREATE TEMP TABLE earshot_first_layout ON COMMIT DROP AS
       SELECT e.event_id, e.audio_id, e.event_type, e.received_at, coalesce(c.state, 'pending') AS state,
              coalesce(c.attempts, 0) AS attempts, c.last_error, c.done_at
         FROM earshot_received_events e LEFT JOIN earshot_receipt_callbacks c USING (event_id)`,
    'DROP TABLE earshot_receipt_callbacks',
    'DROP TABLE earshot_received_events',
  ],
  after: `INSERT INTO earshot_receipt_callbacks (event_id, audio_id, event_type, received_at, state, due_at,
                                                 attempts, last_error, done_at)
          SELECT event_id, audio_id, event_type, received_at, state,
                 CASE WHEN state = 'pending' THEN now() END, attempts, last_error,
                 CASE WHEN state <> 'pending' THEN coalesce(done_at, now()) END
            FROM earshot_first_layout`,
}

/*
 * A store made before callbacks carried the erased flag gets the column. A deletion's callback was
 * recorded only once onDeleted had removed the recording: those of recordings (not of the receiver
 * check) confirm its erasure.
 */
const withoutErased = {
  detect: `SELECT 1 FROM pg_class c WHERE c.oid = to_regclass('earshot_receipt_callbacks') AND relkind = 'r'
             AND NOT EXISTS (SELECT 1 FROM pg_attribute
                              WHERE attrelid = c.oid AND attname = 'erased' AND NOT attisdropped)`,
  add: 'ALTER TABLE earshot_receipt_callbacks ADD COLUMN erased boolean NOT NULL DEFAULT false',
}
const markErasures = `UPDATE earshot_receipt_callbacks SET erased = true
  WHERE event_type = '${PushEventType.DELETED}' AND NOT starts_with(audio_id, '${CHECK_AUDIO_ID_PREFIX}')`

export async function createOutboxSchema(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    // Receivers starting together on one PostgreSQL would otherwise race on CREATE ... IF NOT EXISTS.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('earshot_partner_schema'))`)
    const upgrading = (await tx.query(fromFirstLayout.detect)).length > 0
    if (upgrading) for (const sql of fromFirstLayout.before) await tx.query(sql)
    const addingErased = !upgrading && (await tx.query(withoutErased.detect)).length > 0
    if (addingErased) await tx.query(withoutErased.add)
    for (const sql of statements) await tx.query(sql)
    if (upgrading) await tx.query(fromFirstLayout.after)
    if (upgrading || addingErased) await tx.query(markErasures)
  })
}
