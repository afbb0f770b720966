import type { Database } from '../storage/database.js'

/*
 * The receiver's tables. Prefixed `earshot_` so they can live in a database the partner's own
 * application uses too. Created if missing; a later change to them is a new statement added here.
 */
const statements = [
  // The dedup record: one row per eventId ever accepted (kept; two short rows per recording).
  `CREATE TABLE IF NOT EXISTS earshot_received_events (
    event_id text PRIMARY KEY,
    audio_id text NOT NULL,
    event_type text NOT NULL,
    received_at timestamptz NOT NULL
  )`,
  // Envelope nonces accepted within the replay window; a row past expires_at counts as unseen.
  `CREATE TABLE IF NOT EXISTS earshot_seen_nonces (
    key_version integer NOT NULL,
    nonce text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (key_version, nonce)
  )`,
  // One receipt callback per received event. While pending, next_attempt_at is when it falls due;
  // a claim moves it to the end of the claim's lease. attempts counts claims and fences results.
  `CREATE TABLE IF NOT EXISTS earshot_receipt_callbacks (
    event_id text PRIMARY KEY REFERENCES earshot_received_events,
    audio_id text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'confirmed', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error text,
    done_at timestamptz
  )`,
  `CREATE INDEX IF NOT EXISTS earshot_receipt_callbacks_due
     ON earshot_receipt_callbacks (next_attempt_at) WHERE state = 'pending'`,
  // BRIN: nonces arrive in expiry order, and the index costs next to nothing per push.
  'CREATE INDEX IF NOT EXISTS earshot_seen_nonces_expiry ON earshot_seen_nonces USING brin (expires_at)',
]

export async function createOutboxSchema(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    // Receivers starting together on one PostgreSQL would otherwise race on CREATE ... IF NOT EXISTS.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('earshot_partner_schema'))`)
    for (const sql of statements) await tx.query(sql)
  })
}
