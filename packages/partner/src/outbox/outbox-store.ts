import type { Queryable } from '../storage/database.js'

/*
 * The outbox's statements. Each takes a whole batch (arrays travel as parameters), because on PGlite a
 * statement costs about as much for one row as for a few dozen.
 */

export type CallbackState = 'pending' | 'confirmed' | 'failed'

export interface EnvelopeSeen {
  keyVersion: number
  nonce: string
  eventId: string
}

/**
 * One statement for a batch of pushes at two stages: takes the nonces of pushes just opened (a nonce
 * taken within the window is not returned), finds which of their eventIds were received before, and
 * inserts the events of pushes just stored with, for those new, their pending callbacks held until
 * `holdUntil` (an event and its callback are committed together or not at all). Nonce pairs and
 * recorded eventIds must each be distinct. The lookup does not see the events this statement inserts.
 */
export async function admitAndRecord(
  db: Queryable,
  admits: readonly EnvelopeSeen[],
  records: readonly { eventId: string; eventType: string; audioId: string }[],
  at: { now: Date; nonceExpiresAt: Date; holdUntil: Date },
): Promise<{ taken: Set<string>; known: Set<string>; created: Set<string> }> {
  const rows = await db.query<{
    kind: 'taken' | 'known' | 'created'
    key_version: number | null
    id: string
  }>(
    `WITH taken AS (
       INSERT INTO earshot_seen_nonces (key_version, nonce, expires_at)
       SELECT k, n, $3 FROM unnest($1::int[], $2::text[]) AS u(k, n)
       ON CONFLICT (key_version, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
         WHERE earshot_seen_nonces.expires_at <= $4
       RETURNING key_version, nonce
     ), created AS (
       INSERT INTO earshot_received_events (event_id, audio_id, event_type, received_at)
       SELECT e, a, t, $4 FROM unnest($6::text[], $7::text[], $8::text[]) AS x(e, a, t)
       ON CONFLICT (event_id) DO NOTHING
       RETURNING event_id, audio_id
     ), pending AS (
       INSERT INTO earshot_receipt_callbacks (event_id, audio_id, state, next_attempt_at)
       SELECT event_id, audio_id, 'pending', $9 FROM created
     )
     SELECT 'taken' AS kind, key_version, nonce AS id FROM taken
     UNION ALL
     SELECT 'known', NULL, event_id FROM earshot_received_events WHERE event_id = ANY($5::text[])
     UNION ALL
     SELECT 'created', NULL, event_id FROM created`,
    [
      admits.map((a) => a.keyVersion),
      admits.map((a) => a.nonce),
      at.nonceExpiresAt,
      at.now,
      admits.map((a) => a.eventId),
      records.map((r) => r.eventId),
      records.map((r) => r.audioId),
      records.map((r) => r.eventType),
      at.holdUntil,
    ],
  )
  const taken = new Set<string>()
  const known = new Set<string>()
  const created = new Set<string>()
  for (const row of rows) {
    if (row.kind === 'taken') taken.add(nonceKey(row.key_version as number, row.id))
    else if (row.kind === 'known') known.add(row.id)
    else created.add(row.id)
  }
  return { taken, known, created }
}

export const nonceKey = (keyVersion: number, nonce: string) => `${keyVersion}:${nonce}`

/** Makes the callbacks of repeated events pending again, held until `holdUntil`. */
export async function rearm(db: Queryable, eventIds: readonly string[], holdUntil: Date): Promise<void> {
  await db.query(
    `UPDATE earshot_receipt_callbacks SET state = 'pending', next_attempt_at = $2, done_at = NULL
      WHERE event_id = ANY($1::text[]) AND state <> 'pending'`,
    [eventIds, holdUntil],
  )
}

export interface Claimed {
  eventId: string
  audioId: string
  attempts: number
}

/**
 * Claims up to `limit` pending callbacks that are due, or named in `wanted`: each claim counts an
 * attempt and holds the callback until `leaseUntil` (another claim may take it after that).
 */
export async function claim(
  db: Queryable,
  limit: number,
  now: Date,
  leaseUntil: Date,
  wanted: readonly string[],
): Promise<Claimed[]> {
  const rows = await db.query<{ event_id: string; audio_id: string; attempts: number }>(
    `UPDATE earshot_receipt_callbacks SET attempts = attempts + 1, next_attempt_at = $1
      WHERE event_id IN (
        SELECT event_id FROM earshot_receipt_callbacks
         WHERE state = 'pending' AND (next_attempt_at <= $2 OR event_id = ANY($3::text[]))
         ORDER BY next_attempt_at
         LIMIT $4
         FOR UPDATE SKIP LOCKED)
      RETURNING event_id, audio_id, attempts`,
    [leaseUntil, now, wanted, limit],
  )
  return rows.map((row) => ({ eventId: row.event_id, audioId: row.audio_id, attempts: row.attempts }))
}

/** How an attempt ended. `fence` is the attempts count the row must still have (no newer claim took it). */
export interface Outcome {
  eventId: string
  fence: number
  attempts: number
  state: CallbackState
  nextAttemptAt: Date | null
  lastError: string | null
  doneAt: Date | null
}

export async function writeOutcomes(db: Queryable, outcomes: readonly Outcome[]): Promise<void> {
  // The common case, a first attempt that succeeded, has a statement of its own that is cheap to plan.
  const firstTry = outcomes.filter((o) => o.state === 'confirmed' && o.fence === 0 && o.attempts === 1)
  const first = new Set(firstTry)
  const rest = outcomes.filter((o) => !first.has(o))
  if (firstTry.length > 0) {
    await db.query(
      `UPDATE earshot_receipt_callbacks
          SET state = 'confirmed', attempts = 1, next_attempt_at = NULL, done_at = $2
        WHERE event_id = ANY($1::text[]) AND state = 'pending' AND attempts = 0`,
      [firstTry.map((o) => o.eventId), firstTry[0]?.doneAt],
    )
  }
  if (rest.length > 0) {
    await db.query(
      `UPDATE earshot_receipt_callbacks c
          SET state = x.state, attempts = x.attempts, next_attempt_at = x.next_attempt_at,
              last_error = x.last_error, done_at = x.done_at
         FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], $6::text[], $7::timestamptz[])
           AS x(event_id, fence, attempts, state, next_attempt_at, last_error, done_at)
        WHERE c.event_id = x.event_id AND c.attempts = x.fence AND c.state = 'pending'`,
      [
        rest.map((o) => o.eventId),
        rest.map((o) => o.fence),
        rest.map((o) => o.attempts),
        rest.map((o) => o.state),
        rest.map((o) => o.nextAttemptAt),
        rest.map((o) => o.lastError),
        rest.map((o) => o.doneAt),
      ],
    )
  }
}

/** Every pending callback due now: on the embedded database only this process can be sending them. */
export async function makeAllDue(db: Queryable, now: Date): Promise<void> {
  await db.query(
    `UPDATE earshot_receipt_callbacks SET next_attempt_at = $1
      WHERE state = 'pending' AND next_attempt_at > $1`,
    [now],
  )
}

export async function forgetExpiredNonces(db: Queryable, now: Date): Promise<void> {
  await db.query('DELETE FROM earshot_seen_nonces WHERE expires_at <= $1', [now])
}

/** A receipt callback as stored, for operators and tests. */
export interface ReceiptCallback {
  eventId: string
  audioId: string
  eventType: string
  state: CallbackState
  attempts: number
  /** When a pending callback falls due; null once confirmed or failed. */
  nextAttemptAt: Date | null
  lastError: string | null
  receivedAt: Date
  doneAt: Date | null
}

export async function listCallbacks(
  db: Queryable,
  filter: { state?: CallbackState | undefined; audioId?: string | undefined },
): Promise<ReceiptCallback[]> {
  const rows = await db.query<{
    event_id: string
    audio_id: string
    event_type: string
    state: CallbackState
    attempts: number
    next_attempt_at: Date | null
    last_error: string | null
    received_at: Date
    done_at: Date | null
  }>(
    `SELECT c.event_id, c.audio_id, e.event_type, c.state, c.attempts, c.next_attempt_at, c.last_error,
            e.received_at, c.done_at
       FROM earshot_receipt_callbacks c JOIN earshot_received_events e USING (event_id)
      WHERE ($1::text IS NULL OR c.state = $1) AND ($2::text IS NULL OR c.audio_id = $2)
      ORDER BY e.received_at, c.event_id`,
    [filter.state ?? null, filter.audioId ?? null],
  )
  return rows.map((row) => ({
    eventId: row.event_id,
    audioId: row.audio_id,
    eventType: row.event_type,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    receivedAt: row.received_at,
    doneAt: row.done_at,
  }))
}
