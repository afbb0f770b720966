import { PUSH_URL_STATES } from '@earshot/protocol'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { COUNTED_STATES, countDueDeliveries, countOpenDeliveries } from '../deliveries/delivery-store.js'
import { listPushUrls, type PushUrlView, urlLabel } from '../push-urls/push-url-health.js'
import type { Queryable } from '../storage/database.js'
import type { AttemptResult } from './push-sender.js'

/** What the dispatcher reports of its attempts. */
export interface PushMetrics {
  /** Labelled with a PushAttemptResult. */
  attempts: Counter<'result'>
  latency: Histogram<'result'>
  inFlight: Gauge
  /** Push URLs that recovered by themselves, their failed deliveries replayed. */
  recovered: Counter
}

/** How a push attempt ended, as counted: the sender's result, or `error` when the push could not be made. */
export type PushAttemptResult = AttemptResult | 'error'

export const ATTEMPT_RESULTS: readonly PushAttemptResult[] = [
  'acked',
  'rejected',
  'timeout',
  'network_error',
  'address_refused',
  'aborted',
  'error',
]

/**
 * Registers the push metrics: deliveries by state and the queue's depth, push URLs by health (read from the
 * database at each scrape), and this instance's attempts, their latency and what it holds in flight.
 */
export function registerPushMetrics(registry: Registry, db: Queryable): PushMetrics {
  new Gauge({
    name: 'earshot_deliveries',
    help: 'Push deliveries still moving or waiting for an operator, by state (whole database; confirmed ones are not counted)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const counts = await countOpenDeliveries(db)
      for (const state of COUNTED_STATES) this.set({ state }, counts[state])
    },
  })
  new Gauge({
    name: 'earshot_push_queue_depth',
    help: 'Deliveries due for an attempt now and not yet claimed (whole database)',
    registers: [registry],
    async collect() {
      this.set(await countDueDeliveries(db))
    },
  })
  // Both push URL gauges read one listing per scrape (a scrape collects every metric at once).
  let listing: Promise<PushUrlView[]> | undefined
  const endpoints = () => {
    listing ??= listPushUrls(db).finally(() => {
      listing = undefined
    })
    return listing
  }
  new Gauge({
    name: 'earshot_push_endpoints',
    help: 'Push URLs (in use by an enterprise, or with a health record) by health: healthy, failing, disabled',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const all = await endpoints()
      for (const state of PUSH_URL_STATES) this.set({ state }, all.filter((e) => e.state === state).length)
    },
  })
  new Gauge({
    name: 'earshot_push_endpoint_state',
    help:
      'One series per push URL that is failing or disabled (value 1), labelled with its state and the URL ' +
      'without query or fragment; a healthy URL has none, so the series stay few',
    labelNames: ['url', 'state'],
    registers: [registry],
    async collect() {
      const unhealthy = new Map<string, string>()
      for (const { url, state } of await endpoints()) {
        const label = urlLabel(url)
        if (state === 'disabled' || (state === 'failing' && !unhealthy.has(label)))
          unhealthy.set(label, state)
      }
      this.reset()
      for (const [url, state] of unhealthy) this.set({ url, state }, 1)
    },
  })
  const push: PushMetrics = {
    attempts: new Counter({
      name: 'earshot_push_attempts_total',
      help: 'Push attempts made by this instance, by result',
      labelNames: ['result'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'earshot_push_duration_seconds',
      help: 'Time from sending a push to its answer (or failure), by result',
      labelNames: ['result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: 'earshot_push_in_flight',
      help: 'Deliveries this instance holds: being sent or waiting for a slot',
      registers: [registry],
    }),
    recovered: new Counter({
      name: 'earshot_push_recovered_total',
      help: 'Push URLs this instance saw recover by themselves (an acknowledged push while failing): the deliveries to them that went failed since they began failing are pending again',
      registers: [registry],
    }),
  }
  for (const result of ATTEMPT_RESULTS) push.attempts.inc({ result }, 0)
  return push
}
