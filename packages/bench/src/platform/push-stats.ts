/**
 * Child process of `push.bench.ts` and `push-endpoints.bench.ts`: once the platform has stopped, opens
 * its database (PGlite allows one process at a time) and computes, in SQL, what the deliveries of each
 * bench enterprise (or endpoint) came to: creation → first attempt (min(started_at) over its attempts)
 * and creation → confirmation, attempts per delivery, the instants the rates are taken from, and whether
 * each recording's pushes kept their order.
 */
import type { Database } from '@earshot/platform'
import { openDatabase } from '@earshot/platform/internal'
import { serveParent } from '../child.js'

export interface PushStatsSpec {
  dataDir?: string
  databaseUrl?: string
  /**
   * The deliveries of each enterprise (of one endpoint of it, with `endpointId`); `attemptStarts` asks for
   * the start of every attempt too.
   */
  enterprises: { label: string; enterpriseId: number; endpointId?: number; attemptStarts?: boolean }[]
}

export interface DeliveryStats {
  deliveries: number
  attempted: number
  confirmed: number
  attempts: number
  failedAttempts: number
  /** Deliveries attempted more than once. */
  repeated: number
  /** Milliseconds from deliveries.created_at to the first attempt's started_at. */
  firstP50: number
  firstP99: number
  firstMax: number
  /** Milliseconds from deliveries.created_at to confirmed_at. */
  confirmP50: number
  confirmP99: number
  confirmMax: number
  /** Milliseconds each push attempt took (delivery_attempts.duration_ms: the HTTP exchange). */
  attemptP50: number
  attemptP99: number
  attemptMean: number
  /** Epoch milliseconds. */
  firstCreated: number
  lastCreated: number
  firstAttempt: number
  lastFirstAttempt: number
  lastConfirmed: number
  /**
   * Recordings whose `recording.transcript_ready` was first attempted to an endpoint before (or without)
   * their `recording.audio_ready`'s first attempt to it; and before that attempt's acknowledgement (its
   * start plus duration_ms, to the millisecond).
   */
  outOfOrder: number
  beforeAck: number
  /** Epoch milliseconds each attempt started at, in order, when asked for. */
  attemptStarts?: number[]
}

export interface PushStatsReady {
  type: 'ready'
  stats: Record<string, DeliveryStats>
}

const spec = JSON.parse(process.env.BENCH_PUSH_STATS_SPEC ?? 'null') as PushStatsSpec | null
if (!spec)
  throw new Error(
    'BENCH_PUSH_STATS_SPEC is not set: this module is started by push.bench.js or push-endpoints.bench.js',
  )

const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`

type Target = PushStatsSpec['enterprises'][number]

/** The target's deliveries, as the first CTE of a statement whose parameters are $1 (enterprise) and $2 (endpoint). */
const MINE = `mine AS (SELECT * FROM deliveries WHERE enterprise_id = $1 AND ($2::int8 IS NULL OR endpoint_id = $2))`

async function deliveryStats(db: Database, target: Target): Promise<DeliveryStats> {
  const [row] = await db.query<DeliveryStats>(
    `WITH ${MINE},
     a AS (
       SELECT delivery_id, min(started_at) AS first_attempt, count(*) AS attempts,
              count(*) FILTER (WHERE outcome = 'failed') AS failed
         FROM delivery_attempts WHERE delivery_id IN (SELECT delivery_id FROM mine)
        GROUP BY delivery_id),
     d AS (
       SELECT d.created_at, d.confirmed_at, a.first_attempt, coalesce(a.attempts, 0) AS attempts,
              coalesce(a.failed, 0) AS failed,
              ${epochMs('a.first_attempt - d.created_at')} AS to_first,
              ${epochMs('d.confirmed_at - d.created_at')} AS to_confirm
         FROM mine d LEFT JOIN a USING (delivery_id)),
     durations AS (
       SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99, avg(duration_ms) AS mean
         FROM delivery_attempts WHERE delivery_id IN (SELECT delivery_id FROM mine))
     SELECT count(*) AS deliveries, count(first_attempt) AS attempted, count(confirmed_at) AS confirmed,
            coalesce(sum(attempts), 0)::int8 AS attempts, coalesce(sum(failed), 0)::int8 AS "failedAttempts",
            count(*) FILTER (WHERE attempts > 1) AS repeated,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY to_first) AS "firstP50",
            percentile_cont(0.99) WITHIN GROUP (ORDER BY to_first) AS "firstP99",
            max(to_first) AS "firstMax",
            percentile_cont(0.5) WITHIN GROUP (ORDER BY to_confirm) AS "confirmP50",
            percentile_cont(0.99) WITHIN GROUP (ORDER BY to_confirm) AS "confirmP99",
            max(to_confirm) AS "confirmMax",
            (SELECT p50 FROM durations) AS "attemptP50", (SELECT p99 FROM durations) AS "attemptP99",
            (SELECT mean FROM durations) AS "attemptMean",
            ${epochMs('min(created_at)')} AS "firstCreated", ${epochMs('max(created_at)')} AS "lastCreated",
            ${epochMs('min(first_attempt)')} AS "firstAttempt",
            ${epochMs('max(first_attempt)')} AS "lastFirstAttempt",
            ${epochMs('max(confirmed_at)')} AS "lastConfirmed"
       FROM d`,
    [target.enterpriseId, target.endpointId ?? null],
  )
  if (!row) throw new Error(`no statistics for enterprise ${target.enterpriseId}`)
  // Null (no attempt, no confirmation) becomes NaN, shown as a dash.
  return Object.fromEntries(
    Object.entries(row).map(([name, value]) => [name, value === null ? Number.NaN : Number(value)]),
  ) as unknown as DeliveryStats
}

/** The recordings whose transcript's push was attempted before the audio's (see DeliveryStats.outOfOrder). */
async function orderStats(
  db: Database,
  target: Target,
): Promise<Pick<DeliveryStats, 'outOfOrder' | 'beforeAck'>> {
  const [row] = await db.query<{ out_of_order: string; before_ack: string }>(
    `WITH ${MINE},
     firsts AS (
       SELECT d.audio_id, d.endpoint_id,
              min(a.started_at) FILTER (WHERE d.event_type = 'recording.audio_ready') AS audio_first,
              min(a.started_at + make_interval(secs => a.duration_ms / 1000.0))
                FILTER (WHERE d.event_type = 'recording.audio_ready' AND a.outcome = 'acked') AS audio_acked,
              min(a.started_at) FILTER (WHERE d.event_type = 'recording.transcript_ready') AS transcript_first
         FROM mine d JOIN delivery_attempts a USING (delivery_id)
        GROUP BY d.audio_id, d.endpoint_id)
     SELECT count(*) FILTER (WHERE audio_first IS NULL OR transcript_first <= audio_first) AS out_of_order,
            count(*) FILTER (WHERE audio_acked IS NULL
                                OR transcript_first < audio_acked - interval '1 millisecond') AS before_ack
       FROM firsts WHERE transcript_first IS NOT NULL
        AND EXISTS (SELECT 1 FROM mine m WHERE m.audio_id = firsts.audio_id AND m.endpoint_id = firsts.endpoint_id
                       AND m.event_type = 'recording.audio_ready')`,
    [target.enterpriseId, target.endpointId ?? null],
  )
  return { outOfOrder: Number(row?.out_of_order ?? 0), beforeAck: Number(row?.before_ack ?? 0) }
}

async function attemptStarts(db: Database, target: Target): Promise<number[]> {
  const rows = await db.query<{ at: number }>(
    `WITH ${MINE}
     SELECT ${epochMs('a.started_at')} AS at FROM delivery_attempts a
      WHERE a.delivery_id IN (SELECT delivery_id FROM mine) ORDER BY a.started_at`,
    [target.enterpriseId, target.endpointId ?? null],
  )
  return rows.map((row) => Number(row.at))
}

async function statsOf(db: Database, target: Target): Promise<DeliveryStats> {
  return {
    ...(await deliveryStats(db, target)),
    ...(await orderStats(db, target)),
    ...(target.attemptStarts && { attemptStarts: await attemptStarts(db, target) }),
  }
}

const db = await openDatabase({ dataDir: spec.dataDir, databaseUrl: spec.databaseUrl, poolSize: 2 })
const stats: Record<string, DeliveryStats> = {}
try {
  for (const target of spec.enterprises) stats[target.label] = await statsOf(db, target)
} catch (error) {
  await db.close()
  throw error
}

serveParent({ stats } satisfies Omit<PushStatsReady, 'type'>, () => db.close())
