import { PushEventType } from '@earshot/protocol'
import { defineQueue } from '@earshot/support/queue'
import { RECORDING_DATA_COLUMNS, type RecordingRow } from '../recordings/recording-data.js'
import type { EventType, RecordingEvent } from '../recordings/recording-events.js'
import type { Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'
import { type DeliveryState, deliveryMachine, MAX_REPUSHES } from './delivery-states.js'

/*
 * Durable push deliveries. One row per event; `due_at` says when a dispatcher must next
 * act on it — attempt it (pending), take it back from a claim whose lease ended (in_flight), end its
 * confirm window (acked) — so one partial index serves them all.
 */

/*
 * Lock order. Every transaction that locks rows of several of these tables takes them in this order:
 * the enterprise, its endpoints (by id), their push URLs' health rows (by URL), deliveries (by id). A
 * statement that would lock an earlier one after a later one locks it first instead (a recording's deletion
 * locks its enterprise's endpoints before cancelling its deliveries). Only the foreign key checks of a new
 * delivery take the enterprise (KEY SHARE) after its endpoints: nothing that locks endpoints locks an
 * enterprise in a stronger mode than NO KEY UPDATE, which KEY SHARE does not wait for.
 */

export type { EventType } from '../recordings/recording-events.js'
export { DELIVERY_STATES, type DeliveryState, REPLAYABLE_STATES } from './delivery-states.js'

/** Notified when deliveries become due now, so dispatchers (in any process) attempt them at once. */
const PUSH_CHANNEL = 'earshot_push'

/**
 * The endpoints whose deliveries wait, as the queue's group keys: those an operator disabled, and those
 * whose push URL is disabled (push-url-health.ts).
 */
const PAUSED_GROUPS = `SELECT endpoint_id::text FROM endpoints WHERE NOT enabled AND removed_at IS NULL
                       UNION ALL
                       SELECT ep.endpoint_id::text FROM push_url_health p
                         JOIN endpoints ep ON ep.url = p.url AND ep.removed_at IS NULL
                        WHERE p.disabled_at IS NOT NULL`

/**
 * The endpoint `ep` has deliveries the sweep would hold: one probe of the ready-by-group index per endpoint.
 * A scalar subquery, not EXISTS, which the planner may turn into a join reading every ready delivery.
 */
const HAS_READY = (ep: string) =>
  `coalesce((SELECT true FROM deliveries WHERE group_key = ${ep}.endpoint_id::text AND state = 'pending' LIMIT 1), false)`

/**
 * PAUSED_GROUPS as the sweep reads it before holding their deliveries: each paused endpoint's row, and its
 * push URL's, locked FOR KEY SHARE, as scheduleDeliveries locks them. Enabling an endpoint or a push URL
 * (or moving an endpoint to another URL) locks its row FOR UPDATE: so a sweep or a scheduling that decided
 * "held" commits before the enable's resume looks (which then sees what it held), or waits for the enable
 * and sees the row enabled. Only endpoints with a pending delivery are locked: the others have nothing to
 * hold, and a lock is a write (an idle sweep writes nothing). KEY SHARE does not wait for a claim moving a
 * rated endpoint's next attempt time on (NO KEY UPDATE). The sweep skips a row being changed rather than
 * wait (it may hold lease-expired deliveries a removal waits for): that endpoint's deliveries are not held
 * this time — right if it is being enabled or removed, and the next sweep holds them if it is being disabled.
 * Each probe is a scalar subquery run for a disabled row only: as EXISTS, the planner joined from the other
 * side, probing every endpoint of every enterprise at each sweep (by a read of the whole deliveries table
 * for each endpoint with nothing ready, on statistics that called the ready ones few).
 */
const PAUSED_GROUPS_LOCKED = `SELECT endpoint_id::text FROM (SELECT endpoint_id FROM endpoints d
                                                 WHERE NOT enabled AND removed_at IS NULL AND ${HAS_READY('d')}
                                                   FOR KEY SHARE SKIP LOCKED) d
                              UNION ALL
                              SELECT ep.endpoint_id::text
                                FROM (SELECT url FROM push_url_health p
                                       WHERE disabled_at IS NOT NULL
                                         AND coalesce((SELECT true FROM endpoints e
                                                        WHERE e.url = p.url AND e.removed_at IS NULL AND ${HAS_READY('e')}
                                                        LIMIT 1), false)
                                         FOR KEY SHARE SKIP LOCKED) p
                                JOIN LATERAL (SELECT endpoint_id FROM endpoints e
                                               WHERE e.url = p.url AND e.removed_at IS NULL AND ${HAS_READY('e')}
                                                 FOR KEY SHARE SKIP LOCKED) ep ON true`

/** The states in which a delivery holds back the later events of its recording to its endpoint. */
const IN_ORDER_AHEAD = "'pending', 'held', 'in_flight', 'queued'"

/**
 * Schedules a delivery of each event to every endpoint of the enterprise subscribed to its type. Call it
 * inside the transaction that stores the recording part, so no part is stored without its pushes
 * scheduled. A paused endpoint's deliveries (disabled by an operator, or its push URL disabled) are
 * created held: enabling it catches up in order. A recording's events reach each endpoint in the order they
 * were created: one with an earlier event of its recording still pending, held or in flight to the endpoint
 * waits, queued (sql/000020.sql lets it go), and one following an attempt cancelled in flight is not due
 * before that attempt's lease ends. The earlier deliveries are locked, so that one finishing meanwhile
 * either is seen finished here or sees this one queued. The endpoints (and their disabled push URLs) are
 * locked FOR KEY SHARE, against a removal or an enable (FOR UPDATE): one in progress is waited for, and its
 * endpoint then read as it committed — a removed endpoint gets nothing, an enabled one a pending delivery.
 */
export async function scheduleDeliveries(
  tx: Queryable,
  enterpriseId: number,
  events: readonly RecordingEvent[],
): Promise<number> {
  if (events.length === 0) return 0
  const [row] = await tx.query<{ scheduled: number; pending: number }>(
    `WITH ev AS (SELECT * FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS x(audio_id, event_type, n)),
     eps AS MATERIALIZED (
       SELECT endpoint_id, url, event_types, enabled FROM endpoints
        WHERE enterprise_id = $1 AND removed_at IS NULL AND event_types && $3::text[]
        ORDER BY endpoint_id FOR KEY SHARE),
     down AS MATERIALIZED (
       SELECT url FROM push_url_health WHERE url IN (SELECT url FROM eps) AND disabled_at IS NOT NULL
        ORDER BY url FOR KEY SHARE),
     targets AS (
       SELECT ep.endpoint_id, ev.audio_id, ev.event_type, ev.n,
              NOT ep.enabled OR ep.url IN (SELECT url FROM down) AS paused,
              row_number() OVER (PARTITION BY ep.endpoint_id, ev.audio_id ORDER BY ev.n) AS nth
         FROM eps ep JOIN ev ON ev.event_type = ANY (ep.event_types)),
     earlier AS MATERIALIZED (
       SELECT endpoint_id, audio_id, state IN (${IN_ORDER_AHEAD}) AS ahead, wire_until FROM deliveries
        WHERE audio_id IN (SELECT audio_id FROM ev) AND endpoint_id IS NOT NULL
          AND (state IN (${IN_ORDER_AHEAD}) OR wire_until > now())
        ORDER BY delivery_id FOR NO KEY UPDATE),
     placed AS (
       SELECT t.*, t.nth > 1 OR coalesce(q.ahead, false) AS behind, q.wire_until
         FROM targets t
         LEFT JOIN LATERAL (SELECT bool_or(e.ahead) AS ahead, max(e.wire_until) AS wire_until FROM earlier e
                             WHERE e.endpoint_id = t.endpoint_id AND e.audio_id = t.audio_id) q ON true),
     scheduled AS (
       INSERT INTO deliveries (event_id, enterprise_id, endpoint_id, audio_id, event_type, due_at, group_key, state)
       SELECT gen_random_uuid()::text, $1, p.endpoint_id, p.audio_id, p.event_type,
              CASE WHEN p.behind THEN NULL ELSE greatest(now(), p.wire_until) END, p.endpoint_id::text,
              CASE WHEN p.behind THEN 'queued' WHEN p.paused THEN 'held' ELSE 'pending' END
         FROM placed p ORDER BY p.n, p.endpoint_id
       RETURNING state)
     SELECT count(*) AS scheduled, count(*) FILTER (WHERE state = 'pending') AS pending FROM scheduled`,
    [enterpriseId, events.map((event) => event.audioId), events.map((event) => event.eventType)],
  )
  if ((row?.pending ?? 0) > 0) await deliveryQueue.notify(tx)
  return row?.scheduled ?? 0
}

/**
 * Locks, as scheduleDeliveries does and before any delivery (the lock order above), the enterprise's
 * endpoints and their push URLs: for a statement that locks deliveries before scheduling, as a recording's
 * deletion cancels its deliveries first.
 */
export async function lockEndpointsOf(tx: Queryable, enterpriseId: number): Promise<void> {
  await tx.query(
    `WITH eps AS MATERIALIZED (
       SELECT url FROM endpoints WHERE enterprise_id = $1 AND removed_at IS NULL ORDER BY endpoint_id FOR KEY SHARE)
     SELECT 1 FROM push_url_health WHERE url IN (SELECT url FROM eps) ORDER BY url FOR KEY SHARE`,
    [enterpriseId],
  )
}

/** Until when an attempt of an earlier delivery of the row's recording to its endpoint may be on the wire. */
export const WIRE_WAIT = (row: string) => `(SELECT max(w.wire_until) FROM deliveries w
                                     WHERE w.audio_id = ${row}.audio_id AND w.endpoint_id = ${row}.endpoint_id
                                       AND w.delivery_id < ${row}.delivery_id)`

/**
 * The sweep's re-check of what a concurrent statement could have left waiting (the queue's repair): the
 * recording and endpoint pairs the promotion trigger marked when it could not tell (sql/000020.sql) — their
 * first queued delivery, with nothing of its recording to its endpoint open before it, becomes pending, and
 * the mark goes (kept while that delivery is locked by another statement); and held deliveries of an
 * endpoint no longer paused are resumed, a batch per sweep. Only the marks and the endpoints with held
 * deliveries are visited (one index probe each), so that no backlog is read through on a sweep.
 */
const REPAIR_SQL = `WITH RECURSIVE marks AS (
       SELECT recheck_id, endpoint_id, audio_id FROM delivery_rechecks ORDER BY recheck_id LIMIT $1
          FOR UPDATE SKIP LOCKED),
     heads AS (
       SELECT g.endpoint_id, g.audio_id,
              (SELECT min(q.delivery_id) FROM deliveries q
                WHERE q.audio_id = g.audio_id AND q.endpoint_id = g.endpoint_id AND q.state = 'queued') AS next_id
         FROM (SELECT DISTINCT endpoint_id, audio_id FROM marks) g),
     free AS (
       SELECT h.* FROM heads h
        WHERE h.next_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM deliveries b
                           WHERE b.audio_id = h.audio_id AND b.endpoint_id = h.endpoint_id
                             AND b.delivery_id < h.next_id AND b.state IN (${IN_ORDER_AHEAD}))),
     turn AS (
       SELECT d.delivery_id FROM deliveries d
        WHERE d.state = 'queued' AND d.delivery_id IN (SELECT next_id FROM free)
        ORDER BY d.delivery_id FOR NO KEY UPDATE SKIP LOCKED),
     turned AS (
       UPDATE deliveries q SET state = 'pending', due_at = greatest(now(), ${WIRE_WAIT('q')})
         FROM turn WHERE q.delivery_id = turn.delivery_id
       RETURNING 1),
     rechecked AS (
       DELETE FROM delivery_rechecks m USING marks k
        WHERE m.recheck_id = k.recheck_id
          AND NOT EXISTS (SELECT 1 FROM free f
                           WHERE f.endpoint_id = k.endpoint_id AND f.audio_id = k.audio_id
                             AND f.next_id NOT IN (SELECT delivery_id FROM turn))),
     held_groups (group_key) AS (
       (SELECT group_key FROM deliveries WHERE state = 'held' AND group_key IS NOT NULL ORDER BY group_key LIMIT 1)
       UNION ALL
       SELECT (SELECT h.group_key FROM deliveries h WHERE h.state = 'held' AND h.group_key > g.group_key
                ORDER BY h.group_key LIMIT 1)
         FROM held_groups g WHERE g.group_key IS NOT NULL),
     resume AS (
       SELECT d.delivery_id FROM deliveries d
        WHERE d.state = 'held'
          AND d.delivery_id IN (SELECT delivery_id FROM deliveries
                                 WHERE state = 'held'
                                   AND group_key IN (SELECT group_key FROM held_groups
                                                      WHERE group_key IS NOT NULL AND group_key NOT IN (${PAUSED_GROUPS}))
                                 ORDER BY due_at LIMIT $1)
        ORDER BY d.delivery_id FOR NO KEY UPDATE SKIP LOCKED),
     resumed AS (
       UPDATE deliveries j SET state = 'pending', due_at = greatest(least(j.due_at, now()), ${WIRE_WAIT('j')})
         FROM resume r WHERE j.delivery_id = r.delivery_id
       RETURNING 1)
     SELECT (SELECT count(*) FROM turned) + (SELECT count(*) FROM resumed) AS moved`

/** A claimed delivery: everything needed to send it. */
export interface ClaimedDelivery {
  eventId: string
  eventType: EventType
  audioId: string
  enterpriseId: number
  occurredAt: string
  /** Failed attempts in a row before this one: the position in the retry schedule. */
  failures: number
  /** The endpoint's URL; null for a delivery made before endpoints, of an enterprise without a push URL. */
  pushUrl: string | null
  disabled: boolean
  key: { keyVersion: number; secret: string } | undefined
  /** Undefined once the recording is deleted: its only open delivery then is `recording.deleted`. */
  recording: RecordingRow | undefined
}

interface ClaimRow extends RecordingRow {
  event_id: string
  event_type: EventType
  enterprise_id: number
  occurred_at: string
  failures: number
  push_url: string | null
  disabled: boolean
  key_version: number | null
  secret: string | null
}

/** The outcomes an attempt is recorded with. */
export type AttemptOutcome = 'acked' | 'failed' | 'aborted' | 'gone'

/**
 * Deliveries as a durable queue (@earshot/support/queue): a claim joins what a push needs; a delivery
 * is grouped by its endpoint, for the per-endpoint concurrency limit and rate. Recording an ack
 * confirms the delivery at once when a receipt for its recording came at or after the claim (the
 * callback stamps received_at on the row, so whichever of the two commits second sees the other), or
 * when it is a deletion's push (there is nothing to receipt: a callback for a recording the partner never
 * had is refused); otherwise it waits out the confirm window in `acked`.
 */
export const deliveryQueue = defineQueue<DeliveryState, number, ClaimedDelivery>({
  table: 'deliveries',
  idColumn: 'delivery_id',
  idType: 'int8',
  attempts: {
    table: 'delivery_attempts',
    columns: [
      { name: 'http_status', type: 'int' },
      { name: 'response_code', type: 'int' },
      { name: 'answer', type: 'text' },
    ],
  },
  machine: deliveryMachine,
  channel: PUSH_CHANNEL,
  // A disabled endpoint's or push URL's deliveries are held until an operator enables it.
  pausedGroups: PAUSED_GROUPS,
  pausedGroupsLocked: PAUSED_GROUPS_LOCKED,
  resumeDue: `greatest(least(j.due_at, now()), ${WIRE_WAIT('j')})`,
  repair: REPAIR_SQL,
  rated: { table: 'endpoints', key: 'endpoint_id', perSecond: 'max_per_second', nextAt: 'next_attempt_at' },
  claimed: {
    select: `j.event_id, j.event_type, j.audio_id, j.enterprise_id, ${isoTime('j.occurred_at')} AS occurred_at,
             j.failures, ep.url AS push_url, e.disabled_at IS NOT NULL AS disabled, k.key_version, k.secret,
             ${RECORDING_DATA_COLUMNS}`,
    joins: `JOIN enterprises e ON e.enterprise_id = j.enterprise_id
            LEFT JOIN endpoints ep ON ep.endpoint_id = j.endpoint_id
            LEFT JOIN recordings r ON r.audio_id = j.audio_id
            LEFT JOIN LATERAL (SELECT key_version, secret FROM enterprise_keys
                                WHERE enterprise_id = j.enterprise_id AND retires_at IS NULL
                                ORDER BY key_version DESC LIMIT 1) k ON true`,
    parse(row) {
      const claimed = row as unknown as ClaimRow
      return {
        eventId: claimed.event_id,
        eventType: claimed.event_type,
        audioId: claimed.audio_id,
        enterpriseId: claimed.enterprise_id,
        occurredAt: claimed.occurred_at,
        failures: claimed.failures,
        pushUrl: claimed.push_url,
        disabled: claimed.disabled,
        key:
          claimed.secret === null
            ? undefined
            : { keyVersion: claimed.key_version as number, secret: claimed.secret },
        recording: claimed.device_uid === null ? undefined : claimed,
      }
    },
  },
  settle: {
    // A deletion's push stores nothing to receipt: its acknowledgement confirms it.
    state: `CASE WHEN r.state = 'acked' AND (j.received_at >= j.claimed_at OR j.event_type = '${PushEventType.DELETED}')
                 THEN 'confirmed' ELSE r.state END`,
    set: (
      state,
    ) => `failures = CASE r.outcome WHEN 'acked' THEN 0 WHEN 'failed' THEN j.failures + 1 ELSE j.failures END,
      acks = j.acks + CASE WHEN r.outcome = 'acked' THEN 1 ELSE 0 END,
      acked_at = CASE WHEN r.outcome = 'acked' THEN now() ELSE j.acked_at END,
      first_attempt_at = CASE WHEN j.first_attempt_at IS NULL AND r.outcome IN ('acked', 'failed')
                              THEN to_timestamp(r.started_ms / 1000) ELSE j.first_attempt_at END,
      first_attempt_acked = CASE WHEN j.first_attempt_at IS NULL AND r.outcome IN ('acked', 'failed')
                                 THEN r.outcome = 'acked' ELSE j.first_attempt_acked END,
      failed_at = CASE WHEN ${state} = 'failed' THEN now() ELSE j.failed_at END,
      confirmed_at = CASE WHEN ${state} = 'confirmed' THEN now() ELSE j.confirmed_at END`,
  },
  timers: [
    { state: 'acked', next: `CASE WHEN j.acks > ${MAX_REPUSHES} THEN 'unconfirmed' ELSE 'pending' END` },
  ],
})

/**
 * The states metrics count on every scrape: those still moving (the due index, and the sweepable one) and
 * those waiting for an operator (a partial index). Confirmed and cancelled deliveries are history, as large
 * as the retention allows, and held ones wait for their push URL, as many as its outage made: neither is
 * counted per scrape.
 */
export const COUNTED_STATES = ['pending', 'in_flight', 'acked', 'failed', 'unconfirmed'] as const
export type CountedState = (typeof COUNTED_STATES)[number]

/** Deliveries in each counted state, every one present. */
export async function countOpenDeliveries(db: Queryable): Promise<Record<CountedState, number>> {
  const rows = await db.query<{ state: CountedState; count: number }>(
    `SELECT state, count(*) AS count FROM deliveries WHERE state = 'pending' GROUP BY state
     UNION ALL
     SELECT state, count(*) FROM deliveries WHERE state IN ('in_flight', 'acked') GROUP BY state
     UNION ALL
     SELECT state, count(*) FROM deliveries WHERE state IN ('failed', 'unconfirmed') GROUP BY state`,
  )
  const counts = Object.fromEntries(COUNTED_STATES.map((state) => [state, 0])) as Record<CountedState, number>
  for (const { state, count } of rows) counts[state] = count
  return counts
}

/**
 * Deletes confirmed deliveries, with their attempts, confirmed more than `retentionSeconds` ago, at
 * most `batch` at a time; returns how many. Failed and unconfirmed ones are kept for an operator's
 * replay whatever their age: pruning them would drop events the partner never received.
 */
export async function pruneConfirmedDeliveries(
  db: Queryable,
  retentionSeconds: number,
  batch = 1000,
): Promise<number> {
  const [row] = await db.query<{ pruned: number }>(
    `WITH old AS (
       SELECT delivery_id FROM deliveries
        WHERE state = 'confirmed' AND confirmed_at < now() - make_interval(secs => $1)
        ORDER BY confirmed_at LIMIT $2),
     attempts AS (DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT delivery_id FROM old)),
     pruned AS (DELETE FROM deliveries WHERE delivery_id IN (SELECT delivery_id FROM old) RETURNING 1)
     SELECT count(*) AS pruned FROM pruned`,
    [retentionSeconds, batch],
  )
  return row?.pruned ?? 0
}

/** Deliveries due for an attempt now and not yet claimed: the push queue's depth. */
export async function countDueDeliveries(db: Queryable): Promise<number> {
  const [row] = await db.query<{ count: number }>(
    `SELECT (SELECT count(*) FROM deliveries WHERE state = 'pending' AND due_at <= now())
          + (SELECT count(*) FROM deliveries WHERE state = 'acked' AND due_at <= now()) AS count`,
  )
  return row?.count ?? 0
}
