import type { ResponseCodeValue } from '@earshot/protocol'
import { ERROR_BODY, routeContract } from '@earshot/protocol'
import Type from 'typebox'

/* Probes for load balancers and orchestrators, and the metrics a scraper reads. */

const Status = (status: string, description: string) =>
  Type.Object({ status: Type.Literal(status) }, { description })

/** GET /healthz on either listener: the process serves requests. */
export const healthContract = <Refusals extends readonly ResponseCodeValue[]>(
  tag: string,
  refusals: Refusals,
) =>
  routeContract({
    method: 'GET',
    path: '/healthz',
    operationId: 'health',
    tag,
    summary: 'Liveness',
    open: true,
    answer: { description: 'The process serves requests', payload: { json: Status('ok', 'alive') } },
    refusals,
  })

/** GET /readyz on the partner listener: the database answers and the instance is not shutting down. */
export const readinessContract = routeContract({
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
})

/** GET /metrics on the admin listener; the scraper sends the admin bearer token like any admin client. */
export const metricsContract = routeContract({
  method: 'GET',
  path: '/metrics',
  operationId: 'metrics',
  tag: 'operations',
  summary: 'Prometheus metrics',
  answer: { description: 'The Prometheus text exposition format', payload: { text: 'text/plain' } },
  refusals: [],
  permission: 'operations.read',
})
