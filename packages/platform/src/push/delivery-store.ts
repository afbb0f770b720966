import type { PushEventType } from '@earshot/protocol'
import { isoTime } from '../enterprises/enterprise-store.js'
import type { RecordingRow } from '../recordings/recording-store.js'
import type { Queryable } from '../storage/database.js'

/**
 * Durable push deliveries (DESIGN.md §6). One row per event; `due_at` says when a dispatcher must next
 * act on it, so one partial index serves first attempts, retries, expired claims and confirm windows.
 */
export const DELIVERY_STATES = [
  'pending',
  'in_flight',
  'acked',
  'confirmed',
  'failed',
  'unconfirmed',
] as const
export type DeliveryState = (typeof DELIVERY_STATES)[number]
export type EventType = (typeof PushEventType)[keyof typeof PushEventType]

/** Re-pushes of an acknowledged delivery whose callback does not come, before it is `unconfirmed`. */
export const MAX_REPUSHES = 3

/** Notified when deliveries become due now, so dispatchers (in any process) attempt them at once. */
export const PUSH_CHANNEL = 'earshot_push'

export interface DeliveryEvent {
  audioId: string
  eventType: EventType
}

/**
 * Schedules a delivery for each event of an enterprise that has a push URL. Call it inside the
 * transaction that stores the recording part, so no part is stored without its push scheduled.
 */
export async function scheduleDeliveries(
  tx: Queryable,
  enterpriseId: number,
  events: readonly DeliveryEvent[],
): Promise<number> {
  if (events.length === 0) return 0
  const [row] = await tx.query<{ scheduled: number }>(
    `WITH scheduled AS (
       INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, due_at)
       SELECT gen_random_uuid()::text, e.enterprise_id, x.audio_id, x.event_type, now()
         FROM unnest($2::text[], $3::text[]) AS x(audio_id, event_type)
         JOIN enterprises e ON e.enterprise_id = $1 AND e.push_url IS NOT NULL
       RETURNING 1)
     SELECT count(*) AS scheduled FROM scheduled`,
    [enterpriseId, events.map((event) => event.audioId), events.map((event) => event.eventType)],
  )
  const scheduled = row?.scheduled ?? 0
  if (scheduled > 0) await notifyDue(tx)
  return scheduled
}

async function notifyDue(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify('${PUSH_CHANNEL}', '')`)
}

/** A delivery claimed for one attempt, with everything needed to send it. */
export interface ClaimedDelivery {
  deliveryId: number
  eventId: string
  eventType: EventType
  audioId: string
  enterpriseId: number
  occurredAt: string
  /** The claim's number: the attempt number, and the fence that lets only this claim complete it. */
  attemptNo: number
  /** Failed attempts in a row before this one: the position in the retry schedule. */
  failures: number
  /** Set when the claim found an acknowledged delivery out of re-pushes: it is now `unconfirmed`. */
  gaveUp: boolean
  pushUrl: string | null
  disabled: boolean
  key: { keyVersion: number; secret: string } | undefined
  recording: RecordingRow
}

export interface ClaimOptions {
  claimant: string
  limit: number
  leaseSeconds: number
  /** Push URLs this dispatcher cannot take more work for right now. */
  excludePushUrls: readonly string[]
}

/**
 * Claims due deliveries with FOR UPDATE SKIP LOCKED, so concurrent dispatchers (in any process)
 * never claim the same one. Each claim holds the delivery for `leaseSeconds` (kept alive by
 * extendClaims); if its holder dies, the delivery falls due again when the lease ends.
 */
export async function claimDueDeliveries(db: Queryable, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  const rows = await db.query<ClaimRow>(
    `WITH due AS (
       SELECT d.delivery_id, d.state = 'acked' AND d.acks > $4 AS gave_up, e.push_url,
              e.disabled_at IS NOT NULL AS disabled, k.key_version, k.secret,
              r.device_uid, r.title, r.denoise_url, r.record_duration, r.transcript_id, r.transcript_text,
              r.transcript_sentences, r.duration_ms, r.words_count
         FROM deliveries d
         JOIN enterprises e ON e.enterprise_id = d.enterprise_id
         JOIN recordings r ON r.audio_id = d.audio_id
         LEFT JOIN LATERAL (SELECT key_version, secret FROM enterprise_keys
                             WHERE enterprise_id = d.enterprise_id AND retires_at IS NULL
                             ORDER BY key_version DESC LIMIT 1) k ON true
        WHERE d.due_at <= now() AND (e.push_url IS NULL OR e.push_url <> ALL($3::text[]))
        ORDER BY d.due_at
        LIMIT $2
          FOR UPDATE OF d SKIP LOCKED)
     UPDATE deliveries d
        SET state = CASE WHEN due.gave_up THEN 'unconfirmed' ELSE 'in_flight' END,
            due_at = CASE WHEN due.gave_up THEN NULL ELSE now() + make_interval(secs => $5) END,
            attempt_count = d.attempt_count + CASE WHEN due.gave_up THEN 0 ELSE 1 END,
            claimed_by = CASE WHEN due.gave_up THEN NULL ELSE $1 END
       FROM due
      WHERE d.delivery_id = due.delivery_id
     RETURNING d.delivery_id, d.event_id, d.event_type, d.audio_id, d.enterprise_id,
               ${isoTime('d.occurred_at')} AS occurred_at, d.attempt_count, d.failures, due.*`,
    [options.claimant, options.limit, options.excludePushUrls, MAX_REPUSHES, options.leaseSeconds],
  )
  return rows.map((row) => ({
    deliveryId: row.delivery_id,
    eventId: row.event_id,
    eventType: row.event_type,
    audioId: row.audio_id,
    enterpriseId: row.enterprise_id,
    occurredAt: row.occurred_at,
    attemptNo: row.attempt_count,
    failures: row.failures,
    gaveUp: row.gave_up,
    pushUrl: row.push_url,
    disabled: row.disabled,
    key: row.secret === null ? undefined : { keyVersion: row.key_version as number, secret: row.secret },
    recording: row,
  }))
}

interface ClaimRow extends RecordingRow {
  delivery_id: number
  event_id: string
  event_type: EventType
  enterprise_id: number
  occurred_at: string
  attempt_count: number
  failures: number
  gave_up: boolean
  push_url: string | null
  disabled: boolean
  key_version: number | null
  secret: string | null
}

/** What one push attempt came to. */
export interface AttemptOutcome {
  /** Epoch milliseconds. */
  startedAt: number
  durationMs: number
  acked: boolean
  httpStatus?: number | undefined
  responseCode?: number | undefined
  error?: string | undefined
}

export type NextStep =
  | { kind: 'await_callback'; confirmWindowSeconds: number }
  | { kind: 'retry'; delaySeconds: number }
  | { kind: 'fail' }

export interface FinishedAttempt {
  deliveryId: number
  attemptNo: number
  outcome: AttemptOutcome
  next: NextStep
}

/**
 * Records attempts and moves their deliveries on — acked: wait for the callback; failed: retry later
 * or give up — in one statement for the whole batch. Only the claim that made an attempt moves the
 * delivery: if a callback confirmed it meanwhile, or the claim was lost, the attempt is still
 * recorded and the delivery left as it is.
 */
export async function recordAttempts(
  db: Queryable,
  claimant: string,
  attempts: readonly FinishedAttempt[],
): Promise<void> {
  if (attempts.length === 0) return
  const column = <T>(pick: (attempt: FinishedAttempt) => T) => attempts.map(pick)
  await db.query(
    `WITH finished AS (
       SELECT * FROM unnest($2::int8[], $3::int[], $4::text[], $5::float8[], $6::boolean[], $7::float8[], $8::int[],
                            $9::int[], $10::int[], $11::text[])
         AS x(delivery_id, attempt_no, state, delay, acked, started_ms, duration_ms, http_status, response_code, error)),
     moved AS (
       UPDATE deliveries d
          SET state = f.state, due_at = now() + make_interval(secs => f.delay), claimed_by = NULL,
              failures = CASE WHEN f.acked THEN 0 ELSE d.failures + 1 END,
              acks = d.acks + CASE WHEN f.acked THEN 1 ELSE 0 END,
              acked_at = CASE WHEN f.acked THEN now() ELSE d.acked_at END
         FROM finished f
        WHERE d.delivery_id = f.delivery_id AND d.attempt_count = f.attempt_no AND d.state = 'in_flight'
        RETURNING d.delivery_id, d.due_at)
     INSERT INTO delivery_attempts (delivery_id, attempt_no, started_at, duration_ms, outcome, http_status,
                                    response_code, error, next_attempt_at, claimed_by)
     SELECT f.delivery_id, f.attempt_no, to_timestamp(f.started_ms / 1000), f.duration_ms,
            CASE WHEN f.acked THEN 'acked' ELSE 'failed' END, f.http_status, f.response_code, f.error,
            CASE WHEN f.acked THEN NULL ELSE m.due_at END, $1
       FROM finished f LEFT JOIN moved m ON m.delivery_id = f.delivery_id
     ON CONFLICT DO NOTHING`,
    [
      claimant,
      column((a) => a.deliveryId),
      column((a) => a.attemptNo),
      column((a) =>
        a.next.kind === 'await_callback' ? 'acked' : a.next.kind === 'retry' ? 'pending' : 'failed',
      ),
      column((a) =>
        a.next.kind === 'await_callback'
          ? a.next.confirmWindowSeconds
          : a.next.kind === 'retry'
            ? a.next.delaySeconds
            : null,
      ),
      column((a) => a.outcome.acked),
      column((a) => a.outcome.startedAt),
      column((a) => Math.round(a.outcome.durationMs)),
      column((a) => a.outcome.httpStatus ?? null),
      column((a) => a.outcome.responseCode ?? null),
      column((a) => a.outcome.error?.slice(0, 500) ?? null),
    ],
  )
}

/** Keeps this dispatcher's claims alive while their attempts wait or run. */
export async function extendClaims(
  db: Queryable,
  claimant: string,
  deliveryIds: readonly number[],
  leaseSeconds: number,
): Promise<void> {
  if (deliveryIds.length === 0) return
  await db.query(
    `UPDATE deliveries SET due_at = now() + make_interval(secs => $3)
      WHERE delivery_id = ANY($2::int8[]) AND claimed_by = $1 AND state = 'in_flight'`,
    [claimant, deliveryIds, leaseSeconds],
  )
}

/** Hands claimed, not yet attempted deliveries back, due now, for any dispatcher to take. */
export async function releaseClaims(
  db: Queryable,
  claimant: string,
  deliveryIds: readonly number[],
): Promise<void> {
  if (deliveryIds.length === 0) return
  await db.query(
    `UPDATE deliveries SET state = 'pending', due_at = now(), attempt_count = attempt_count - 1, claimed_by = NULL
      WHERE delivery_id = ANY($2::int8[]) AND claimed_by = $1 AND state = 'in_flight'`,
    [claimant, deliveryIds],
  )
  await notifyDue(db)
}

/** Seconds until the next delivery falls due (0 if one is due now); undefined when none is waiting. */
export async function secondsUntilNextDue(db: Queryable): Promise<number | undefined> {
  const [row] = await db.query<{ seconds: number | null }>(
    `SELECT greatest(extract(epoch FROM min(due_at) - now()), 0)::float8 AS seconds
       FROM deliveries WHERE due_at IS NOT NULL`,
  )
  return row?.seconds ?? undefined
}

export interface AttemptView {
  attemptNo: number
  startedAt: string
  durationMs: number
  outcome: 'acked' | 'failed'
  httpStatus: number | null
  responseCode: number | null
  error: string | null
  nextAttemptAt: string | null
}

export interface DeliveryView {
  deliveryId: number
  enterpriseId: number
  audioId: string
  eventId: string
  eventType: EventType
  state: DeliveryState
  attempts: AttemptView[]
  createdAt: string
  /** When the next attempt (pending) or re-push (acked) is due; null otherwise. */
  nextAttemptAt: string | null
  ackedAt: string | null
  confirmedAt: string | null
}

export interface DeliveryFilter {
  enterpriseId?: number | undefined
  state?: DeliveryState | undefined
  audioId?: string | undefined
  /** Only deliveries with a smaller id: the cursor for the next page, newest first. */
  before?: number | undefined
  limit: number
}

const deliveryColumns = `d.delivery_id AS "deliveryId", d.enterprise_id AS "enterpriseId", d.audio_id AS "audioId",
  d.event_id AS "eventId", d.event_type AS "eventType", d.state,
  coalesce((SELECT json_agg(json_build_object(
              'attemptNo', a.attempt_no, 'startedAt', ${isoTime('a.started_at')}, 'durationMs', a.duration_ms,
              'outcome', a.outcome, 'httpStatus', a.http_status, 'responseCode', a.response_code, 'error', a.error,
              'nextAttemptAt', ${isoTime('a.next_attempt_at')}) ORDER BY a.attempt_no)
              FROM delivery_attempts a WHERE a.delivery_id = d.delivery_id), '[]') AS attempts,
  ${isoTime('d.created_at')} AS "createdAt",
  CASE WHEN d.state IN ('pending', 'acked') THEN ${isoTime('d.due_at')} END AS "nextAttemptAt",
  ${isoTime('d.acked_at')} AS "ackedAt", ${isoTime('d.confirmed_at')} AS "confirmedAt"`

/** Deliveries matching the filter, newest first, each with its attempts. */
export async function listDeliveries(db: Queryable, filter: DeliveryFilter): Promise<DeliveryView[]> {
  const rows = await db.query<DeliveryView>(
    `SELECT ${deliveryColumns} FROM deliveries d
      WHERE ($1::int8 IS NULL OR d.enterprise_id = $1) AND ($2::text IS NULL OR d.state = $2)
        AND ($3::text IS NULL OR d.audio_id = $3) AND ($4::int8 IS NULL OR d.delivery_id < $4)
      ORDER BY d.delivery_id DESC LIMIT $5`,
    [
      filter.enterpriseId ?? null,
      filter.state ?? null,
      filter.audioId ?? null,
      filter.before ?? null,
      filter.limit,
    ],
  )
  return rows.map(withParsedAttempts)
}

export async function getDelivery(db: Queryable, deliveryId: number): Promise<DeliveryView | undefined> {
  const [row] = await db.query<DeliveryView>(
    `SELECT ${deliveryColumns} FROM deliveries d WHERE d.delivery_id = $1`,
    [deliveryId],
  )
  return row && withParsedAttempts(row)
}

// json_agg arrives parsed from PostgreSQL, as text from PGlite.
function withParsedAttempts(row: DeliveryView): DeliveryView {
  const attempts = row.attempts as AttemptView[] | string
  return { ...row, attempts: typeof attempts === 'string' ? JSON.parse(attempts) : attempts }
}

/** The states an operator may replay from. */
export const REPLAYABLE_STATES: readonly DeliveryState[] = ['failed', 'unconfirmed']

/**
 * Puts failed or unconfirmed deliveries back to `pending`, due now, with a fresh retry schedule and
 * re-push allowance; returns how many. Same eventId: the partner dedups.
 */
export async function replayDeliveries(
  db: Queryable,
  selection: { deliveryId: number } | { enterpriseId: number; from: string; to: string },
): Promise<number> {
  const [row] = await db.query<{ replayed: number }>(
    `WITH replayed AS (
       UPDATE deliveries SET state = 'pending', due_at = now(), failures = 0, acks = 0
        WHERE state IN ('failed', 'unconfirmed')
          AND ${'deliveryId' in selection ? 'delivery_id = $1' : 'enterprise_id = $1 AND created_at >= $2::timestamptz AND created_at < $3::timestamptz'}
       RETURNING 1)
     SELECT count(*) AS replayed FROM replayed`,
    'deliveryId' in selection
      ? [selection.deliveryId]
      : [selection.enterpriseId, selection.from, selection.to],
  )
  const replayed = row?.replayed ?? 0
  if (replayed > 0) await notifyDue(db)
  return replayed
}

/** Deliveries per state, every state present (for metrics). */
export async function countDeliveriesByState(db: Queryable): Promise<Record<DeliveryState, number>> {
  const rows = await db.query<{ state: DeliveryState; count: number }>(
    'SELECT state, count(*) AS count FROM deliveries GROUP BY state',
  )
  const counts = Object.fromEntries(DELIVERY_STATES.map((state) => [state, 0])) as Record<
    DeliveryState,
    number
  >
  for (const { state, count } of rows) counts[state] = count
  return counts
}

/** Deliveries due for an attempt now and not yet claimed: the push queue's depth. */
export async function countDueDeliveries(db: Queryable): Promise<number> {
  const [row] = await db.query<{ count: number }>(
    `SELECT count(*) AS count FROM deliveries WHERE due_at <= now() AND state IN ('pending', 'acked')`,
  )
  return row?.count ?? 0
}
