import { countConfirmedSince, recentAttempts } from '../deliveries/delivery-activity.js'
import { type CountedState, countDueDeliveries, countOpenDeliveries } from '../deliveries/delivery-store.js'
import { listPushUrls, type PushUrlView } from '../push-urls/push-url-health.js'
import type { Queryable } from '../storage/database.js'

/** The span the overview's push figures cover. */
export const OVERVIEW_WINDOW_SECONDS = 3600

export interface Overview {
  windowSeconds: number
  deliveries: {
    /** Every delivery in a state still moving or waiting for an operator. */
    byState: Record<CountedState, number>
    /** Confirmed deliveries are history, as many as the retention keeps: only the window's are counted. */
    confirmedInWindow: number
  }
  /** Deliveries due for an attempt now and not yet claimed. */
  queueDepth: number
  push: {
    /** Attempts that ended with the partner's answer or a failure to get one; aborted ones are not counted. */
    attempts: number
    acked: number
    /** acked / attempts; null without attempts. */
    successRate: number | null
    latencyMs: { p50: number | null; p99: number | null }
  }
  endpoints: PushUrlView[]
}

/**
 * What the operators' console shows first (issue 15): deliveries by state, the last hour of push attempts
 * (success rate, duration percentiles computed by the database) and every push URL's health. Each figure
 * reads an index: attempts by started_at (migration 12), confirmed deliveries by confirmed_at, open ones
 * by due_at or the stuck-state index.
 */
export async function readOverview(db: Queryable): Promise<Overview> {
  const [byState, queueDepth, endpoints, push, confirmedInWindow] = await Promise.all([
    countOpenDeliveries(db),
    countDueDeliveries(db),
    listPushUrls(db),
    recentAttempts(db, OVERVIEW_WINDOW_SECONDS),
    countConfirmedSince(db, OVERVIEW_WINDOW_SECONDS),
  ])
  const { attempts, acked } = push
  return {
    windowSeconds: OVERVIEW_WINDOW_SECONDS,
    deliveries: { byState, confirmedInWindow },
    queueDepth,
    push: {
      attempts,
      acked,
      successRate: attempts === 0 ? null : acked / attempts,
      latencyMs: { p50: roundedMs(push.p50), p99: roundedMs(push.p99) },
    },
    endpoints,
  }
}

function roundedMs(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10
}
