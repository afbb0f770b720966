import type { ResponseCodeValue } from '@earshot/protocol'
import type { PartnerEnv } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context/platform-context.js'
import { healthContract, metricsContract, readinessContract } from '../http/operations-contract.js'
import { defineRoute, type RouteSpec } from '../http/route-spec.js'

/** GET /healthz on either listener: the process serves requests. */
export const healthRoute = (tag: string, refusals: readonly ResponseCodeValue[]): RouteSpec<unknown> =>
  defineRoute(healthContract(tag, refusals), () => async () => ({ status: 'ok' }))

/** GET /readyz on the partner listener: the database answers and the instance is not shutting down. */
export const readinessRoute = defineRoute(
  readinessContract,
  ({ context, lifecycle }: PartnerEnv<PlatformContext>) =>
    async function readiness(_request, reply) {
      if (lifecycle.shuttingDown) return reply.code(503).send({ status: 'shutting down' })
      try {
        await context.db.query('SELECT 1')
        return { status: 'ready' }
      } catch {
        return reply.code(503).send({ status: 'database unavailable' })
      }
    },
)

/** GET /metrics on the admin listener. */
export const metricsRoute = defineRoute(
  metricsContract,
  (context: PlatformContext) =>
    async function metrics(_request, reply) {
      const { registry } = context.metrics
      return reply.type(registry.contentType).send(await registry.metrics())
    },
)
