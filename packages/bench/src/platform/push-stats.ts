/**
 * Child process of `push.bench.ts`: once the platform has stopped, opens its database (PGlite allows
 * one process at a time) and computes, in SQL, what the deliveries of each bench enterprise came to:
 * creation → first attempt (min(started_at) over its attempts) and creation → confirmation, attempts
 * per delivery, and the instants the rates are taken from.
 */
import type { Database } from '@earshot/platform'
import { openDatabase } from '@earshot/platform'
import { serveParent } from '../child.js'

export interface PushStatsSpec {
  dataDir?: string
  databaseUrl?: string
  enterprises: { label: string; enterpriseId: number }[]
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
  /** Epoch milliseconds. */
  firstCreated: number
  lastCreated: number
  firstAttempt: number
  lastFirstAttempt: number
  lastConfirmed: number
}

export interface PushStatsReady {
  type: 'ready'
  stats: Record<string, DeliveryStats>
}

const spec = JSON.parse(process.env.BENCH_PUSH_STATS_SPEC ?? 'null') as PushStatsSpec | null
if (!spec) throw new Error('BENCH_PUSH_STATS_SPEC is not set: this module is started by push.bench.js')

const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`

async function deliveryStats(db: Database, enterpriseId: number): Promise<DeliveryStats> {
  const [row] = await db.query<DeliveryStats>(
    `WITH a AS (
       SELECT delivery_id, min(started_at) AS first_attempt, count(*) AS attempts,
              count(*) FILTER (WHERE outcome = 'failed') AS failed
         FROM delivery_attempts
        WHERE delivery_id IN (SELECT delivery_id FROM deliveries WHERE enterprise_id = $1)
        GROUP BY delivery_id),
     d AS (
       SELECT d.created_at, d.confirmed_at, a.first_attempt, coalesce(a.attempts, 0) AS attempts,
              coalesce(a.failed, 0) AS failed,
              ${epochMs('a.first_attempt - d.created_at')} AS to_first,
              ${epochMs('d.confirmed_at - d.created_at')} AS to_confirm
         FROM deliveries d LEFT JOIN a USING (delivery_id)
        WHERE d.enterprise_id = $1)
     SELECT count(*) AS deliveries, count(first_attempt) AS attempted, count(confirmed_at) AS confirmed,
            coalesce(sum(attempts), 0)::int8 AS attempts, coalesce(sum(failed), 0)::int8 AS "failedAttempts",
            count(*) FILTER (WHERE attempts > 1) AS repeated,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY to_first) AS "firstP50",
            percentile_cont(0.99) WITHIN GROUP (ORDER BY to_first) AS "firstP99",
            max(to_first) AS "firstMax",
            percentile_cont(0.5) WITHIN GROUP (ORDER BY to_confirm) AS "confirmP50",
            percentile_cont(0.99) WITHIN GROUP (ORDER BY to_confirm) AS "confirmP99",
            max(to_confirm) AS "confirmMax",
            (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FROM delivery_attempts
              WHERE delivery_id IN (SELECT delivery_id FROM deliveries WHERE enterprise_id = $1)) AS "attemptP50",
            (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) FROM delivery_attempts
              WHERE delivery_id IN (SELECT delivery_id FROM deliveries WHERE enterprise_id = $1)) AS "attemptP99",
            ${epochMs('min(created_at)')} AS "firstCreated", ${epochMs('max(created_at)')} AS "lastCreated",
            ${epochMs('min(first_attempt)')} AS "firstAttempt",
            ${epochMs('max(first_attempt)')} AS "lastFirstAttempt",
            ${epochMs('max(confirmed_at)')} AS "lastConfirmed"
       FROM d`,
    [enterpriseId],
  )
  if (!row) throw new Error(`no statistics for enterprise ${enterpriseId}`)
  // Null (no attempt, no confirmation) becomes NaN, shown as a dash.
  return Object.fromEntries(
    Object.entries(row).map(([name, value]) => [name, value === null ? Number.NaN : Number(value)]),
  ) as unknown as DeliveryStats
}

const db = await openDatabase({ dataDir: spec.dataDir, databaseUrl: spec.databaseUrl, poolSize: 2 })
const stats: Record<string, DeliveryStats> = {}
try {
  for (const { label, enterpriseId } of spec.enterprises) stats[label] = await deliveryStats(db, enterpriseId)
} catch (error) {
  await db.close()
  throw error
}

serveParent({ stats } satisfies Omit<PushStatsReady, 'type'>, () => db.close())
