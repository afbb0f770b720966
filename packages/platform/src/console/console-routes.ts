import { InvalidParameterError, ISO_INSTANT_RULE, parseInstant } from '@earshot/protocol'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { PlatformContext } from '../context.js'
import { requireEnterprise } from '../enterprises/enterprise-params.js'
import { ID_RULE, idParam, positiveInteger } from '../http/admin-params.js'
import { countReplayable, DELIVERY_STATES, type DeliveryState } from '../push/delivery-store.js'
import { type DeliveryFilter, type DeliveryView, listDeliveries } from '../push/delivery-views.js'
import { consoleAssets } from './console-assets.js'
import { type Overview, readOverview } from './overview.js'

export const CONSOLE_PATH = '/console'

const DEFAULT_LOG_LIMIT = 25
const MAX_LOG_LIMIT = 200
const LOG_FIELDS = ['enterpriseId', 'state', 'audioId', 'from', 'to', 'before', 'limit'] as const
const RANGE_FIELDS = ['from', 'to'] as const

/**
 * The operators' console (issue 15): its pages at /console (served without the admin token, which the
 * pages send on every call), and the admin routes it reads beyond the ones the CLI uses:
 *
 * - GET {prefix}/overview → deliveries by state, the last hour of push attempts, queue depth, push URLs
 * - GET {prefix}/delivery-log?enterpriseId=&state=&audioId=&from=&to=&before=&limit=
 *     → {deliveries, nextBefore}: as GET {prefix}/deliveries, newest first, also by creation time
 *       (from inclusive, to exclusive, as a range replay takes them); nextBefore is the cursor of the
 *       next page, null on the last
 * - GET {prefix}/enterprises/:enterpriseId/deliveries/replayable?from=&to=
 *     → {enterpriseId, from, to, replayable}: how many deliveries a range replay of the same body
 *       would put back to pending now, for the console's confirmation
 */
export function consoleRoutes(app: FastifyInstance, context: PlatformContext, prefix: string): void {
  const { db } = context
  consoleAssets(app, CONSOLE_PATH)

  app.get(`${prefix}/overview`, async (): Promise<Overview> => readOverview(db))

  app.get(
    `${prefix}/delivery-log`,
    async (request): Promise<{ deliveries: DeliveryView[]; nextBefore: number | null }> => {
      const filter = logFilter(request.query)
      // One row more than the page tells whether there is a next page.
      const rows = await listDeliveries(db, { ...filter, limit: filter.limit + 1 })
      const deliveries = rows.slice(0, filter.limit)
      const last = deliveries.at(-1)
      return { deliveries, nextBefore: rows.length > filter.limit && last ? last.deliveryId : null }
    },
  )

  app.get(`${prefix}/enterprises/:enterpriseId/deliveries/replayable`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
    const { from, to } = rangeQuery(request)
    await requireEnterprise(db, enterpriseId)
    return { enterpriseId, from, to, replayable: await countReplayable(db, { enterpriseId, from, to }) }
  })
}

/** The query's fields as strings, each given at most once, none but those allowed. */
function queryFields<F extends string>(query: unknown, allowed: readonly F[]): Partial<Record<F, string>> {
  const fields = (query ?? {}) as Record<string, unknown>
  for (const [name, value] of Object.entries(fields)) {
    if (!(allowed as readonly string[]).includes(name)) {
      throw new InvalidParameterError(name, `is not a filter; use ${allowed.join(', ')}`)
    }
    if (typeof value !== 'string') throw new InvalidParameterError(name, 'must be given once')
  }
  return fields as Partial<Record<F, string>>
}

function instant(field: string, value: string): string {
  if (parseInstant(value) === undefined) throw new InvalidParameterError(field, ISO_INSTANT_RULE)
  return value
}

function rangeQuery(request: FastifyRequest): { from: string; to: string } {
  const { from, to } = queryFields(request.query, RANGE_FIELDS)
  if (from === undefined) throw new InvalidParameterError('from', `is required and ${ISO_INSTANT_RULE}`)
  if (to === undefined) throw new InvalidParameterError('to', `is required and ${ISO_INSTANT_RULE}`)
  checkOrder(instant('from', from), instant('to', to))
  return { from, to }
}

function checkOrder(from: string, to: string): void {
  if ((parseInstant(from) as number) >= (parseInstant(to) as number)) {
    throw new InvalidParameterError('from', 'must be before to')
  }
}

function logFilter(query: unknown): DeliveryFilter {
  const text = queryFields(query, LOG_FIELDS)
  const filter: DeliveryFilter = { limit: DEFAULT_LOG_LIMIT }
  if (text.enterpriseId !== undefined) {
    filter.enterpriseId = positiveInteger(text.enterpriseId)
    if (filter.enterpriseId === undefined) throw new InvalidParameterError('enterpriseId', ID_RULE)
  }
  if (text.state !== undefined) {
    if (!(DELIVERY_STATES as readonly string[]).includes(text.state)) {
      throw new InvalidParameterError('state', `must be one of ${DELIVERY_STATES.join(', ')}`)
    }
    filter.state = text.state as DeliveryState
  }
  if (text.audioId !== undefined) {
    if (!/^[\x21-\x7e]{1,128}$/.test(text.audioId)) {
      throw new InvalidParameterError('audioId', 'must be 1 to 128 printable ASCII characters')
    }
    filter.audioId = text.audioId
  }
  if (text.from !== undefined) filter.from = instant('from', text.from)
  if (text.to !== undefined) filter.to = instant('to', text.to)
  if (filter.from !== undefined && filter.to !== undefined) checkOrder(filter.from, filter.to)
  if (text.before !== undefined) {
    filter.before = positiveInteger(text.before)
    if (filter.before === undefined) {
      throw new InvalidParameterError('before', 'must be a delivery id (a positive integer)')
    }
  }
  if (text.limit !== undefined) {
    const limit = positiveInteger(text.limit)
    if (limit === undefined || limit > MAX_LOG_LIMIT) {
      throw new InvalidParameterError('limit', `must be an integer from 1 to ${MAX_LOG_LIMIT}`)
    }
    filter.limit = limit
  }
  return filter
}
