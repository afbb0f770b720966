import { scopeOf } from '../access/principal.js'
import type { PlatformContext } from '../context/platform-context.js'
import { deliveryLogFilter, replayableRange } from '../deliveries/delivery-queries.js'
import { countReplayable } from '../deliveries/delivery-replays.js'
import { listDeliveries } from '../deliveries/delivery-views.js'
import { requireEnterprise } from '../enterprises/enterprise-params.js'
import { idParam } from '../http/admin-params.js'
import { defineRoute } from '../http/route-spec.js'
import { countReplayableContract, deliveryLogContract, overviewContract } from './console-contract.js'
import { readOverview } from './overview.js'

/* The admin routes the operators' console reads beyond the ones the CLI uses. */

const overviewRoute = defineRoute(
  overviewContract,
  (context: PlatformContext) => async () => readOverview(context.db),
)

const deliveryLogRoute = defineRoute(
  deliveryLogContract,
  (context: PlatformContext) =>
    async function deliveryLog(request) {
      const filter = deliveryLogFilter(request.query)
      // One row more than the page tells whether there is a next page.
      const rows = await listDeliveries(context.db, {
        ...filter,
        enterprises: scopeOf(request),
        limit: filter.limit + 1,
      })
      const deliveries = rows.slice(0, filter.limit)
      const last = deliveries.at(-1)
      return { deliveries, nextBefore: rows.length > filter.limit && last ? last.deliveryId : null }
    },
)

const replayableRoute = defineRoute(
  countReplayableContract,
  (context: PlatformContext) =>
    async function replayable(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const { from, to } = replayableRange(request.query)
      await requireEnterprise(context.db, enterpriseId)
      const replayable = await countReplayable(context.db, { enterpriseId, from, to })
      return { enterpriseId, from, to, replayable }
    },
)

export const consoleRoutes = [overviewRoute, deliveryLogRoute, replayableRoute]
