import type { FastifyInstance } from 'fastify'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { feedLagSeconds } from '../changes/feed-lag.js'
import { COUNTED_STATES, countDueDeliveries, countOpenDeliveries } from '../push/delivery-store.js'
import { ENDPOINT_STATES, type EndpointView, listEndpoints, urlLabel } from '../push/endpoint-health.js'
import type { AttemptResult } from '../push/push-sender.js'
import type { Queryable } from '../storage/database.js'

export interface PushMetrics {
  /** Labelled with a PushAttemptResult. */
  attempts: Counter<'result'>
  latency: Histogram<'result'>
  inFlight: Gauge
}

/** One registry per running platform (no global state), exposed at GET /metrics on the admin listener. */
export interface PlatformMetrics {
  registry: Registry
  push: PushMetrics
  instrumentHttp(app: FastifyInstance, listener: 'partner' | 'admin'): void
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

export function createMetrics(db: Queryable): PlatformMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'earshot_' })

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
  new Gauge({
    name: 'earshot_change_feed_lag_seconds',
    help: 'How long the oldest committed change not yet in the change feed has waited: a transaction still running on the database server holds it back (0 when none)',
    registers: [registry],
    async collect() {
      this.set(await feedLagSeconds(db))
    },
  })
  // Both push URL gauges read one listing per scrape (a scrape collects every metric at once).
  let listing: Promise<EndpointView[]> | undefined
  const endpoints = () => {
    listing ??= listEndpoints(db).finally(() => {
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
      for (const state of ENDPOINT_STATES) this.set({ state }, all.filter((e) => e.state === state).length)
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
  }
  for (const result of ATTEMPT_RESULTS) push.attempts.inc({ result }, 0)

  const requests = new Counter({
    name: 'earshot_http_requests_total',
    help: 'HTTP requests answered, by listener, method, route and status',
    labelNames: ['listener', 'method', 'route', 'status'],
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'earshot_http_request_duration_seconds',
    help: 'HTTP request duration, by listener, method and route',
    labelNames: ['listener', 'method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })

  return {
    registry,
    push,
    instrumentHttp(app, listener) {
      app.addHook('onResponse', async (request, reply) => {
        // The route pattern, never the raw URL: ids in paths would make one series per id.
        const labels = { listener, method: request.method, route: request.routeOptions.url ?? 'unmatched' }
        requests.inc({ ...labels, status: String(reply.statusCode) })
        duration.observe(labels, reply.elapsedTime / 1000)
      })
    },
  }
}
