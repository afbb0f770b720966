import type { Levels } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'
import { addCounts, emptyCounts, levelsOf } from './level-counts.js'
import { completeHours, countSpan, HOUR_MS, type Rollup } from './level-hours.js'

/*
 * An enterprise's delivery service levels over the last 24 hours and 7 days, of the deliveries created in
 * them: first-attempt latency (creation to the first attempt's start) p50/p95, the share of first attempts
 * acknowledged, acknowledgement-to-receipt p95 (level-counts.ts), and the backlog now. The window's complete
 * hours come from the rollup (level-hours.ts); its part-hours at each end are counted as they are.
 */

export type LevelWindow = '24h' | '7d'

const WINDOW_MS: Record<LevelWindow, number> = { '24h': 24 * HOUR_MS, '7d': 7 * 24 * HOUR_MS }

/** The states a backlog counts: waiting to be pushed, or being pushed (the predicate of sql/000027.sql's index). */
const BACKLOG_STATES = ['pending', 'held', 'queued', 'in_flight'] as const

/**
 * The levels of both windows ending at nowMs. marginMs: how long after the time it carries an attempt's or
 * a confirmation's row may commit (the push timeout and then some).
 */
export async function computeLevels(
  db: Queryable,
  enterpriseId: number,
  nowMs: number,
  marginMs = 60_000,
  held?: Rollup,
): Promise<{ levels: Record<LevelWindow, Levels>; rollup: Rollup }> {
  const currentHour = Math.floor(nowMs / HOUR_MS) * HOUR_MS
  const windowStart = (window: LevelWindow) => nowMs - WINDOW_MS[window]
  const firstWholeHour = (window: LevelWindow) => Math.ceil(windowStart(window) / HOUR_MS) * HOUR_MS
  const rollup = await completeHours(
    db,
    enterpriseId,
    { fromMs: firstWholeHour('7d'), toMs: currentHour, nowMs, marginMs },
    held,
  )
  const current = await countSpan(db, enterpriseId, currentHour, nowMs)
  const [row] = await db.query<{ backlog: number }>(
    `SELECT count(*)::int AS backlog FROM deliveries
      WHERE enterprise_id = $1 AND state IN (${BACKLOG_STATES.map((state) => `'${state}'`).join(', ')})`,
    [enterpriseId],
  )
  const levels = async (window: LevelWindow) => {
    const from = firstWholeHour(window)
    const counts = addCounts(emptyCounts(), current)
    addCounts(counts, await countSpan(db, enterpriseId, windowStart(window), from))
    for (const [hour, each] of rollup.hours)
      if (hour >= from && hour < currentHour) addCounts(counts, each.counts)
    return levelsOf(counts, row?.backlog ?? 0)
  }
  return { levels: { '24h': await levels('24h'), '7d': await levels('7d') }, rollup }
}

/** How old figures may be when read. */
export const LEVELS_MAX_LAG_MS = 10_000
/** Past this age, a read answers the figures it has and reads them again behind it. */
const REFRESH_AFTER_MS = LEVELS_MAX_LAG_MS / 2
/** Enterprises whose figures and counted hours an instance holds at most; the least recently counted go first. */
const _MAX_HELD = 100
/** Counted hours not looked at for this long would be counted anew: they are let go. */
const _HELD_FOR_MS = 10 * 60_000

interface Held {
  levels: Record<LevelWindow, Levels>
  rollup: Rollup
  computedAt: number
}

/**
 * The levels as partners read them, held per instance, at most LEVELS_MAX_LAG_MS old: a reader coming back
 * within that time (a chart refreshing itself) never waits for them to be read again, and one reading at a
 * time per enterprise runs however many read.
 */
export class LevelsCache {
  readonly #held = new Map<number, Held>()
  readonly #reading = new Map<number, Promise<Held>>()

  constructor(
    private readonly db: Queryable,
    private readonly clock: () => number,
    private readonly marginMs: number,
  ) {}

  async read(enterpriseId: number, window: LevelWindow): Promise<Levels> {
    const held = this.#held.get(enterpriseId)
    const age = held ? this.clock() - held.computedAt : Number.POSITIVE_INFINITY
    if (held && age < LEVELS_MAX_LAG_MS) {
      if (age >= REFRESH_AFTER_MS) this.#compute(enterpriseId).catch(() => this.#held.delete(enterpriseId))
      return held.levels[window]
    }
    return (await this.#compute(enterpriseId)).levels[window]
  }

  #compute(enterpriseId: number): Promise<Held> {
    const running = this.#reading.get(enterpriseId)
    if (running) return running
    const computedAt = this.clock()
    const before = this.#held.get(enterpriseId)?.rollup
    const reading = computeLevels(this.db, enterpriseId, computedAt, this.marginMs, before)
      .then(({ levels, rollup }) => {
        this.#forgetStale()
        const held = { levels, rollup, computedAt }
        this.#held.delete(enterpriseId)
        this.#held.set(enterpriseId, held)
        return held
      })
      .finally(() => this.#reading.delete(enterpriseId))
    this.#reading.set(enterpriseId, reading)
    return reading
  }

  #forgetStale(): void {
    const now = this.clock()
    for (const [key, held] of this.#held)
      if (now - held.computedAt >= LEVELS_MAX_LAG_MS) this.#held.delete(key)
  }
}
