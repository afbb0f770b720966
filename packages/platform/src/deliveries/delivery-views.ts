import type { EventType } from '../recordings/recording-events.js'
import type { Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'
import type { DeliveryState } from './delivery-states.js'
import type { AttemptOutcome } from './delivery-store.js'

/** The delivery log as operators read it: each delivery with its attempts, newest first. */
export interface AttemptView {
  /** 1 for the delivery's first attempt recorded, and so on. */
  attemptNo: number
  startedAt: string
  durationMs: number
  outcome: AttemptOutcome
  httpStatus: number | null
  responseCode: number | null
  error: string | null
  /** The first 4 KiB of the receiver's answer; null when none came (or before answers were kept). */
  answer: string | null
  nextAttemptAt: string | null
}

export interface DeliveryView {
  deliveryId: number
  enterpriseId: number
  /** The endpoint it is pushed to; null for one made before endpoints, of an enterprise without a push URL. */
  endpointId: number | null
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
  endpointId?: number | undefined
  state?: DeliveryState | undefined
  audioId?: string | undefined
  eventType?: EventType | undefined
  /** Only deliveries with a smaller id: the cursor for the next page, newest first. */
  before?: number | undefined
  /** Only deliveries created at or after `from` and before `to` (ISO instants), as a range replay takes. */
  from?: string | undefined
  to?: string | undefined
  /** Only these enterprises' (an operator limited to them); absent or null: every one. */
  enterprises?: readonly number[] | null | undefined
  limit: number
}

const deliveryColumns = `d.delivery_id AS "deliveryId", d.enterprise_id AS "enterpriseId",
  d.endpoint_id::int AS "endpointId", d.audio_id AS "audioId",
  d.event_id AS "eventId", d.event_type AS "eventType", d.state,
  coalesce((SELECT json_agg(json_build_object(
              'attemptNo', a.n, 'startedAt', ${isoTime('a.started_at')}, 'durationMs', a.duration_ms,
              'outcome', a.outcome, 'httpStatus', a.http_status, 'responseCode', a.response_code, 'error', a.error, 'answer', a.answer,
              'nextAttemptAt', ${isoTime('a.next_attempt_at')}) ORDER BY a.n)
              FROM (SELECT *, row_number() OVER (ORDER BY claim_no, attempt_id) AS n FROM delivery_attempts
                     WHERE delivery_id = d.delivery_id) a), '[]') AS attempts,
  ${isoTime('d.created_at')} AS "createdAt",
  CASE WHEN d.state IN ('pending', 'acked') THEN ${isoTime('d.due_at')} END AS "nextAttemptAt",
  ${isoTime('d.acked_at')} AS "ackedAt", ${isoTime('d.confirmed_at')} AS "confirmedAt"`

/** Deliveries matching the filter, newest first, each with its attempts. */
export async function listDeliveries(db: Queryable, filter: DeliveryFilter): Promise<DeliveryView[]> {
  const rows = await db.query<DeliveryView>(
    `SELECT ${deliveryColumns} FROM deliveries d
      WHERE ($1::int8 IS NULL OR d.enterprise_id = $1) AND ($2::text IS NULL OR d.state = $2)
        AND ($3::text IS NULL OR d.audio_id = $3) AND ($4::int8 IS NULL OR d.delivery_id < $4)
        AND ($6::timestamptz IS NULL OR d.created_at >= $6) AND ($7::timestamptz IS NULL OR d.created_at < $7)
        AND ($8::int8 IS NULL OR d.endpoint_id = $8) AND ($9::int8[] IS NULL OR d.enterprise_id = ANY ($9)) AND ($10::text IS NULL OR d.event_type = $10)
      ORDER BY d.delivery_id DESC LIMIT $5`,
    [
      filter.enterpriseId ?? null,
      filter.state ?? null,
      filter.audioId ?? null,
      filter.before ?? null,
      filter.limit,
      filter.from ?? null,
      filter.to ?? null,
      filter.endpointId ?? null,
      filter.enterprises ?? null,
      filter.eventType ?? null,
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

/** What a range replay selects (before the state): an enterprise's deliveries created in [from, to). */
