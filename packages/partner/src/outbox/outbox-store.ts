import { defineQueue, defineQueueMachine } from '@earshot/support/queue'
import type { Queryable } from '../storage/database.js'

/*
 * The outbox's tables as statements. Each takes a whole batch (arrays travel as parameters), because on
 * PGlite a statement costs about as much for one row as for a few dozen.
 */

/**
 * A receipt callback's states and every transition between them, written once: the queue's statements
 * follow it and the schema installs a trigger generated from it that refuses any other change of state.
 *
 * A callback is recorded already claimed (`in_flight`, claim 1) by the outbox that received its push,
 * held until the answer went out (wake(eventId)) for at most the answer grace and one attempt; that
 * outbox then sends it without a claim statement. Everything else is claimed from `pending` when due.
 */
export const callbackMachine = defineQueueMachine({
  ready: 'pending',
  claimed: 'in_flight',
  final: ['confirmed', 'failed'],
  transitions: [
    { from: 'pending', to: 'in_flight', on: 'claim' }, // the claim number grows by one
    // The attempt's result, under the current claim:
    { from: 'in_flight', to: 'confirmed', on: 'confirmed' }, // the platform answered 2000
    { from: 'in_flight', to: 'failed', on: 'refused' }, // a refusal no retry can turn into 2000
    { from: 'in_flight', to: 'pending', on: 'retry' }, // any other failure: due after the schedule's delay
    // (also a 2000 or a refusal after a repeated event re-armed the callback during the attempt)
    { from: 'in_flight', to: 'pending', on: 'release' }, // lease over, handed back, the embedded database reopened
    // The platform pushed the event again: it still waits for the callback (an operator's replay).
    { from: 'confirmed', to: 'pending', on: 'rearm' },
    { from: 'failed', to: 'pending', on: 'rearm' },
  ],
})

export type StoredState = (typeof callbackMachine.states)[number]

/** A callback's state as the kit reports it: `pending` covers `in_flight` (held, or being sent). */
export type CallbackState = 'pending' | 'confirmed' | 'failed'

/** What a claim of a callback carries. */
export interface CallbackJob {
  audioId: string
  /** The event whose receipt this is. */
  eventType: string
  /** An erasure confirmation (`erased: true`): the recording was deleted and removed from the store. */
  erased: boolean
  /** Failed attempts in a row before this one: the position in the retry schedule. */
  failures: number
}

const CALLBACKS = 'earshot_receipt_callbacks'

/**
 * Receipt callbacks as a durable queue (@earshot/support/queue). A result moves its callback only under
 * the current claim. A repeated event that re-armed the callback while a claim held it (rearmed_at at or
 * after claimed_at) turns the claim's 2000 or refusal into `pending`: the callback goes out again, after
 * the hold the result asks for, since its answer to the repeat is on its way.
 */
export const callbackQueue = defineQueue<StoredState, string, CallbackJob>({
  table: CALLBACKS,
  idColumn: 'event_id',
  idType: 'text',
  attempts: { table: 'earshot_receipt_callback_attempts' },
  machine: callbackMachine,
  channel: CALLBACKS,
  claimed: {
    select: 'j.audio_id, j.event_type, j.erased, j.failures',
    parse: (row) => ({
      audioId: row.audio_id as string,
      eventType: row.event_type as string,
      erased: row.erased as boolean,
      failures: row.failures as number,
    }),
  },
  settle: {
    state: `CASE WHEN r.state IN ('confirmed', 'failed') AND j.rearmed_at >= j.claimed_at THEN 'pending'
                 ELSE r.state END`,
    set: (state) => `failures = CASE r.outcome WHEN 'failed' THEN j.failures + 1 WHEN 'succeeded' THEN 0
                                               ELSE j.failures END,
      attempts = j.attempts + 1, last_error = r.error,
      done_at = CASE WHEN ${state} IN ('confirmed', 'failed') THEN now() END`,
  },
})

export interface EnvelopeSeen {
  keyVersion: number
  nonce: string
  eventId: string
}

/**
 * One statement for a batch of pushes at two stages: takes the nonces of pushes just opened (a nonce
 * taken within the window is not returned), finds which of their eventIds were received before, and
 * inserts the events of pushes just stored, each new one with its callback (one row) claimed by
 * `claimant` (claim 1) for `holdSeconds`. Nonce pairs and recorded eventIds must each be distinct. The
 * lookup does not see the events this statement inserts; it probes the key once per eventId (as
 * `= ANY($5)`, PostgreSQL's cached generic plan came to cost far more per push).
 */
export async function admitAndRecord(
  db: Queryable,
  admits: readonly EnvelopeSeen[],
  records: readonly { eventId: string; eventType: string; audioId: string; erased?: boolean | undefined }[],
  at: { now: Date; nonceExpiresAt: Date; holdSeconds: number; claimant: string },
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
       INSERT INTO ${CALLBACKS} (event_id, audio_id, event_type, erased, received_at, state, due_at,
                                claim_no, claimed_by, claimed_at)
       SELECT e, a, t, d, $4, 'in_flight', now() + make_interval(secs => $9::float8), 1, $10, now()
         FROM unnest($6::text[], $7::text[], $8::text[], $11::boolean[]) AS x(e, a, t, d)
       ON CONFLICT (event_id) DO NOTHING
       RETURNING event_id
     )
     SELECT 'taken' AS kind, key_version, nonce AS id FROM taken
     UNION ALL
     SELECT 'known', NULL, c.event_id
       FROM unnest($5::text[]) AS k(event_id),
            LATERAL (SELECT event_id FROM ${CALLBACKS} WHERE event_id = k.event_id LIMIT 1) c
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
      at.holdSeconds,
      at.claimant,
      records.map((r) => r.erased === true),
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

/**
 * The callbacks of repeated events go out again: a confirmed or failed one is pending again, held for
 * `holdSeconds` (until the repeat's answer went out); one held by a claim is marked re-armed, so that
 * the claim's result leaves it pending. A pending one is left as it is.
 */
export async function rearm(db: Queryable, eventIds: readonly string[], holdSeconds: number): Promise<void> {
  await db.query(
    `UPDATE ${CALLBACKS}
        SET state = CASE state WHEN 'in_flight' THEN state ELSE 'pending' END,
            due_at = CASE state WHEN 'in_flight' THEN due_at ELSE now() + make_interval(secs => $2::float8) END,
            failures = CASE state WHEN 'in_flight' THEN failures ELSE 0 END,
            done_at = NULL, rearmed_at = now()
      WHERE event_id = ANY($1::text[]) AND state <> 'pending'`,
    [eventIds, holdSeconds],
  )
}

/**
 * Hands back the callbacks `claimant` still holds for their answer (never woken), keeping their hold:
 * pending, due when it ends.
 */
export async function handBackHeld(db: Queryable, claimant: string): Promise<void> {
  await db.query(
    `UPDATE ${CALLBACKS} SET state = 'pending', claimed_by = NULL
      WHERE state = 'in_flight' AND claimed_by = $1 AND due_at IS NOT NULL`,
    [claimant],
  )
}

/**
 * Every callback due now, those held by a claim included: on the embedded database nothing but the
 * process opening it can be sending them.
 */
export async function releaseAll(db: Queryable): Promise<void> {
  await db.query(
    `UPDATE ${CALLBACKS} SET state = 'pending', due_at = now(), claimed_by = NULL
      WHERE due_at IS NOT NULL AND (due_at > now() OR state = 'in_flight')`,
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
  /** An erasure confirmation: sent with `erased: true`. */
  erased: boolean
  state: CallbackState
  /** Attempts that moved it (a late result of a claim no longer current is only in the attempts log). */
  attempts: number
  /** When a pending callback falls due (or its claim ends); null once confirmed or failed. */
  nextAttemptAt: Date | null
  /** The error of the latest attempt; null when it succeeded or none was made. */
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
    erased: boolean
    state: CallbackState
    attempts: number
    due_at: Date | null
    last_error: string | null
    received_at: Date
    done_at: Date | null
  }>(
    `SELECT event_id, audio_id, event_type, erased, shown AS state, attempts, due_at, last_error, received_at, done_at
       FROM (SELECT *, CASE state WHEN 'in_flight' THEN 'pending' ELSE state END AS shown
               FROM ${CALLBACKS}) c
      WHERE ($1::text IS NULL OR shown = $1) AND ($2::text IS NULL OR audio_id = $2)
      ORDER BY received_at, event_id`,
    [filter.state ?? null, filter.audioId ?? null],
  )
  return rows.map((row) => ({
    eventId: row.event_id,
    audioId: row.audio_id,
    eventType: row.event_type,
    erased: row.erased,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.due_at,
    lastError: row.last_error,
    receivedAt: row.received_at,
    doneAt: row.done_at,
  }))
}
