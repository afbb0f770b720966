import type { Queryable } from '../storage/database.js'

export interface AttemptActivity {
  /** Attempts that ended with the partner's answer or a failure to get one; aborted ones are not counted. */
  attempts: number
  acked: number
  p50: number | null
  p99: number | null
}

/** The push attempts of the last `windowSeconds`: how many, how many acknowledged, and their latency. */
export async function recentAttempts(db: Queryable, windowSeconds: number): Promise<AttemptActivity> {
  const [row] = await db.query<AttemptActivity>(
    `SELECT count(*) AS attempts, count(*) FILTER (WHERE outcome = 'acked') AS acked,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99
       FROM delivery_attempts
      WHERE started_at >= now() - make_interval(secs => $1) AND outcome <> 'aborted'`,
    [windowSeconds],
  )
  return row ?? { attempts: 0, acked: 0, p50: null, p99: null }
}

/** Deliveries confirmed in the last `windowSeconds`. */
export async function countConfirmedSince(db: Queryable, windowSeconds: number): Promise<number> {
  const [row] = await db.query<{ count: number }>(
    `SELECT count(*) AS count FROM deliveries
      WHERE state = 'confirmed' AND confirmed_at >= now() - make_interval(secs => $1)`,
    [windowSeconds],
  )
  return row?.count ?? 0
}
