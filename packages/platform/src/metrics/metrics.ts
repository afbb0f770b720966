import type { FastifyInstance } from 'fastify'
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'

/**
 * One registry per running platform (no global state), exposed at GET /metrics on the admin listener, with
 * the HTTP metrics; each feature registers its own on it (the platform's start hands them the registry).
 */
export interface PlatformMetrics {
  registry: Registry
  instrumentHttp(app: FastifyInstance, listener: 'partner' | 'admin'): void
}

export function createMetrics(): PlatformMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'earshot_' })

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
    instrumentHttp(app, listener) {
      // Each series' handles are made on its first request: no label objects are built per request.
      const series = new Map<string, { counter: Counter.Internal; histogram: Histogram.Internal<string> }>()
      app.addHook('onResponse', (request, reply, done) => {
        // The route pattern, never the raw URL: ids in paths would make one series per id.
        const route = request.routeOptions.url ?? 'unmatched'
        const status = String(reply.statusCode)
        const key = `${request.method} ${route} ${status}`
        let handles = series.get(key)
        if (!handles) {
          handles = {
            counter: requests.labels(listener, request.method, route, status),
            histogram: duration.labels(listener, request.method, route),
          }
          series.set(key, handles)
        }
        handles.counter.inc()
        handles.histogram.observe(reply.elapsedTime / 1000)
        done()
      })
    },
  }
}
