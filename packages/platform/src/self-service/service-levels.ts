import type { Levels } from '@earshot/protocol'
import { PushEventType } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'

/*
 * An enterprise's delivery service levels over a window, of the deliveries created in it: first-attempt
 * latency (creation to the first attempt's start) p50/p95, the share of first attempts acknowledged,
 * acknowledgement-to-receipt p95, and the backlog now. Percentiles are nearest-rank (percentile_disc).
 */

export type LevelWindow = '24h' | '7d'

const WINDOW_SECONDS: Record<LevelWindow, number> = { '24h': 24 * 3600, '7d': 7 * 24 * 3600 }

/** The states a backlog counts: waiting to be pushed, or being pushed. */
export const BACKLOG_STATES = ['pending', 'held', 'queued', 'in_flight'] as const

/** Reads the levels from the deliveries table: one pass over the window's rows. */
export async function computeLevels(
  db: Queryable,
  enterpriseId: number,
  window: LevelWindow,
  nowMs: number,
): Promise<Levels> {
  const [row] = await db.query<{
    p50: number | null
    p95: number | null
    share: number | null
    receipt: number | null
    backlog: number
  }>(
    `WITH w AS (
       SELECT extract(epoch FROM first_attempt_at - created_at) * 1000 AS first_ms, first_attempt_acked,
              CASE WHEN state = 'confirmed' AND acked_at IS NOT NULL AND event_type <> '${PushEventType.DELETED}'
                   THEN greatest(0, extract(epoch FROM confirmed_at - acked_at) * 1000) END AS receipt_ms
         FROM deliveries
        WHERE enterprise_id = $1 AND created_at >= to_timestamp($3::float8 / 1000) - make_interval(secs => $2)
          AND created_at <= to_timestamp($3::float8 / 1000))
     SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY first_ms)::float8 AS p50,
            percentile_disc(0.95) WITHIN GROUP (ORDER BY first_ms)::float8 AS p95,
            (count(*) FILTER (WHERE first_attempt_acked)::float8 / nullif(count(first_ms), 0)) AS share,
            percentile_disc(0.95) WITHIN GROUP (ORDER BY receipt_ms)::float8 AS receipt,
            (SELECT count(*) FROM deliveries
              WHERE enterprise_id = $1 AND state IN (${BACKLOG_STATES.map((s) => `'${s}'`).join(', ')}))::int AS backlog
       FROM w`,
    [enterpriseId, WINDOW_SECONDS[window], nowMs],
  )
  const round = (ms: number | null | undefined) => (ms == null ? null : Math.round(ms))
  return {
    firstAttemptP50Ms: round(row?.p50),
    firstAttemptP95Ms: round(row?.p95),
    firstAttemptAckShare: row?.share ?? null,
    ackToReceiptP95Ms: round(row?.receipt),
    backlog: row?.backlog ?? 0,
  }
}

/** How old figures may be when read. */
export const LEVELS_MAX_LAG_MS = 10_000
/** Past this age, a read answers the figures it has and refreshes them behind it. */
const REFRESH_AFTER_MS = LEVELS_MAX_LAG_MS / 2

interface Held {
  levels: Levels
  computedAt: number
}

/** Past this many figures held, those too old to answer are let go. */
const MAX_HELD = 1000

/**
 * The levels as partners read them, held per instance: at most LEVELS_MAX_LAG_MS old. A reader that comes
 * back within that time (a chart refreshing itself) never waits for the window to be read again; one
 * computation at a time per enterprise and window, however many read.
 */
export class LevelsCache {
  readonly #held = new Map<string, Held>()
  readonly #pending = new Map<string, Promise<Levels>>()

  constructor(
    private readonly db: Queryable,
    private readonly clock: () => number,
  ) {}

  async read(enterpriseId: number, window: LevelWindow): Promise<Levels> {
    const key = `${enterpriseId} ${window}`
    const held = this.#held.get(key)
    const age = held ? this.clock() - held.computedAt : Number.POSITIVE_INFINITY
    if (held && age < REFRESH_AFTER_MS) return held.levels
    if (held && age < LEVELS_MAX_LAG_MS) {
      this.#compute(key, enterpriseId, window).catch(() => this.#held.delete(key))
      return held.levels
    }
    return this.#compute(key, enterpriseId, window)
  }

  #compute(key: string, enterpriseId: number, window: LevelWindow): Promise<Levels> {
    const running = this.#pending.get(key)
    if (running) return running
    const startedAt = this.clock()
    const computing = computeLevels(this.db, enterpriseId, window, startedAt)
      .then((levels) => {
        if (this.#held.size >= MAX_HELD) this.#forgetStale()
        this.#held.set(key, { levels, computedAt: startedAt })
        return levels
      })
      .finally(() => this.#pending.delete(key))
    this.#pending.set(key, computing)
    return computing
  }

  #forgetStale(): void {
    const now = this.clock()
    for (const [key, held] of this.#held)
      if (now - held.computedAt >= LEVELS_MAX_LAG_MS) this.#held.delete(key)
  }
}
