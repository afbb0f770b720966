import { ResponseCode } from '@earshot/protocol'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { EnterpriseParams, requireEnterprise } from '../enterprises/enterprise-params.js'
import { idParam, WITH_ID } from '../http/admin-params.js'
import type { RouteSpec } from '../http/route-spec.js'
import {
  DeliveryLogQuerySchema,
  deliveryLogFilter,
  ReplayableQuerySchema,
  replayableRange,
} from '../push/delivery-queries.js'
import { countReplayable } from '../push/delivery-replays.js'
import { listDeliveries } from '../push/delivery-views.js'
import { DeliveryLogSchema, ReplayableSchema } from '../push/push-answers.js'
import { readOverview } from './overview.js'
import { OverviewSchema } from './overview-answer.js'

/* The admin routes the operators' console reads beyond the ones the CLI uses. */

const overviewRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('overview'),
  tag: 'console',
  summary: 'Deliveries by state, the last hour of push attempts, queue depth and push URL health',
  answer: { description: 'The figures', payload: { json: OverviewSchema } },
  refusals: [],
  handle: (context) => async () => readOverview(context.db),
}

const deliveryLogRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('deliveryLog'),
  tag: 'console',
  summary: "List deliveries as GET /deliveries does, also by creation time, with the next page's cursor",
  query: DeliveryLogQuerySchema,
  answer: { description: 'A page of deliveries', payload: { json: DeliveryLogSchema } },
  refusals: [ResponseCode.INVALID_PARAMETER],
  handle: (context) =>
    async function deliveryLog(request) {
      const filter = deliveryLogFilter(request.query)
      // One row more than the page tells whether there is a next page.
      const rows = await listDeliveries(context.db, { ...filter, limit: filter.limit + 1 })
      const deliveries = rows.slice(0, filter.limit)
      const last = deliveries.at(-1)
      return { deliveries, nextBefore: rows.length > filter.limit && last ? last.deliveryId : null }
    },
}

const replayableRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('countReplayable'),
  tag: 'console',
  summary: 'Count what a range replay with these bounds would replay now',
  params: EnterpriseParams,
  query: ReplayableQuerySchema,
  answer: { description: 'The count', payload: { json: ReplayableSchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function replayable(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const { from, to } = replayableRange(request.query)
      await requireEnterprise(context.db, enterpriseId)
      const replayable = await countReplayable(context.db, { enterpriseId, from, to })
      return { enterpriseId, from, to, replayable }
    },
}

export const consoleRoutes = [overviewRoute, deliveryLogRoute, replayableRoute]
