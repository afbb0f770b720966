import Type from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PartnerEnv } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context.js'
import { ERROR_BODY, type RouteSpec } from '../http/route-spec.js'

/* Probes for load balancers and orchestrators, and the metrics a scraper reads. */

const Status = (status: string, description: string) =>
  Type.Object({ status: Type.Literal(status) }, { description })

/** GET /healthz on either listener: the process serves requests. */
export const healthRoute = (tag: string, refusals: RouteSpec<unknown>['refusals']): RouteSpec<unknown> => ({
  method: 'GET',
  path: '/healthz',
  operationId: 'health',
  tag,
  summary: 'Liveness',
  open: true,
  answer: { description: 'The process serves requests', payload: { json: Status('ok', 'alive') } },
  refusals,
  handle: () => async () => ({ status: 'ok' }),
})

/** GET /readyz on the partner listener: the database answers and the instance is not shutting down. */
export const readinessRoute: RouteSpec<PartnerEnv> = {
  method: 'GET',
  path: '/readyz',
  operationId: 'readiness',
  tag: 'health',
  summary: 'Readiness: the database answers',
  open: true,
  answer: { description: 'Ready', payload: { json: Status('ready', 'ready') } },
  otherAnswers: {
    503: {
      description: 'Shutting down (5030), or the database is unavailable',
      payload: {
        json: {
          anyOf: [ERROR_BODY, Type.Object({ status: Type.Enum(['shutting down', 'database unavailable']) })],
        },
      },
    },
  },
  refusals: [],
  handle: ({ context, lifecycle }) =>
    async function readiness(_request, reply) {
      if (lifecycle.shuttingDown) return reply.code(503).send({ status: 'shutting down' })
      try {
        await context.db.query('SELECT 1')
        return { status: 'ready' }
      } catch {
        return reply.code(503).send({ status: 'database unavailable' })
      }
    },
}

/** GET /metrics on the admin listener; the scraper sends the admin bearer token like any admin client. */
export const metricsRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('metrics'),
  tag: 'operations',
  summary: 'Prometheus metrics',
  answer: { description: 'The Prometheus text exposition format', payload: { text: 'text/plain' } },
  refusals: [],
  handle: (context) =>
    async function metrics(_request, reply) {
      const { registry } = context.metrics
      return reply.type(registry.contentType).send(await registry.metrics())
    },
}
