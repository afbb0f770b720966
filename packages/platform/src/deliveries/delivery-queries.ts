import {
  checkInstant,
  component,
  InvalidParameterError,
  ISO_INSTANT_PATTERN,
  ISO_INSTANT_RULE,
  messageParser,
  RULE,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import Type, { type TObject } from 'typebox'
import { ID_RULE } from '../http/admin-params.js'
import { DELIVERY_STATES } from './delivery-store.js'
import type { DeliveryFilter } from './delivery-views.js'

/*
 * What the delivery routes take, as schemas their parsers check and their documents show: the list's and
 * the delivery log's query strings, a range, an unreceipted replay.
 */

export const DEFAULT_DELIVERY_LIMIT = 100
export const MAX_DELIVERY_LIMIT = 1000
const DEFAULT_LOG_LIMIT = 25

/** A positive integer as query text: up to 15 digits, not all zeros. */
const IdText = (description: string, rule: string) =>
  Type.String({ pattern: '^0*[1-9][0-9]*$', maxLength: 15, description, [RULE]: rule })
const Instant = (description: string) =>
  Type.String({ pattern: ISO_INSTANT_PATTERN, description, [RULE]: ISO_INSTANT_RULE })
/** Query text from 1 to max (max a multiple of 100 up to 1000), default `fallback`. */
const Limit = (maxPattern: string, max: number, fallback: number) =>
  Type.String({
    pattern: `^0*(${maxPattern})$`,
    maxLength: 15,
    description: `deliveries per page, default ${fallback}`,
    [RULE]: `must be an integer from 1 to ${max}`,
  })

const filters = {
  enterpriseId: Type.Optional(IdText('only deliveries of this enterprise', ID_RULE)),
  state: Type.Optional(
    Type.Enum(DELIVERY_STATES, {
      description: 'only deliveries in this state',
      [RULE]: `must be one of ${DELIVERY_STATES.join(', ')}`,
    }),
  ),
  audioId: Type.Optional(
    Type.String({
      pattern: '^[\\x21-\\x7e]{1,128}$',
      description: 'only deliveries of this recording',
      [RULE]: 'must be 1 to 128 printable ASCII characters',
    }),
  ),
  before: Type.Optional(
    IdText(
      'only deliveries with a smaller id: the last deliveryId of a page, for the next one',
      'must be a delivery id (a positive integer)',
    ),
  ),
}

/** A query string whose fields are all optional and each given once. */
const queryOf = <P extends TObject['properties']>(properties: P) =>
  Type.Object(properties, {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: `is not a filter; use ${Object.keys(properties).join(', ')}`,
  })

/** GET /deliveries's query string. */
export const DeliveryListQuerySchema = queryOf({
  ...filters,
  limit: Type.Optional(Limit('[1-9][0-9]{0,2}|1000', MAX_DELIVERY_LIMIT, DEFAULT_DELIVERY_LIMIT)),
})
const deliveryListQuery = messageParser(DeliveryListQuerySchema)

/** GET /delivery-log's query string: the list's filters, and creation times as a range replay takes them. */
export const DeliveryLogQuerySchema = queryOf({
  enterpriseId: filters.enterpriseId,
  state: filters.state,
  audioId: filters.audioId,
  from: Type.Optional(Instant('only deliveries created at or after this instant')),
  to: Type.Optional(Instant('only deliveries created before this instant')),
  before: filters.before,
  limit: Type.Optional(Limit('[1-9][0-9]?|1[0-9]{2}|200', 200, DEFAULT_LOG_LIMIT)),
})
const deliveryLogQuery = messageParser(DeliveryLogQuerySchema, ({ from, to }) => checkRange(from, to))

/** A range replay: the enterprise's failed and unconfirmed deliveries created from `from` until `to`. */
export const ReplayRangeSchema = Type.Object(
  {
    from: Instant("inclusive lower bound on the deliveries' creation time"),
    to: Instant("exclusive upper bound on the deliveries' creation time"),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of a replay; give only from and to',
    ...component({
      name: 'ReplayRange',
      description: 'Replays the failed and unconfirmed deliveries created in [from, to).',
    }),
  },
)
export const replayRange = messageParser(ReplayRangeSchema, ({ from, to }) => checkRange(from, to))

/** The count of what a range replay would replay: the same bounds, as a query string. */
export const ReplayableQuerySchema = Type.Object(
  {
    from: Instant('inclusive lower bound on creation time'),
    to: Instant('exclusive upper bound on creation time'),
  },
  { additionalProperties: false, [UNKNOWN_FIELD_RULE]: 'is not a filter; use from, to' },
)
const replayableQuery = messageParser(ReplayableQuerySchema, ({ from, to }) => checkRange(from, to))

/** An unreceipted replay: every delivery created since `since` that was never receipted. */
export const UnreceiptedReplaySchema = Type.Object(
  {
    since: Instant("inclusive lower bound on the deliveries' creation time"),
    dryRun: Type.Optional(
      Type.Boolean({
        description: 'true: only count what would be replayed; default false',
        [RULE]: 'must be true or false',
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of an unreceipted replay; give since and dryRun',
    ...component({
      name: 'UnreceiptedReplay',
      description:
        'Pushes again every delivery created since `since` that was never receipted (acked, failed, unconfirmed); pending and in-flight ones are pushed anyway.',
    }),
  },
)
export const unreceiptedReplay = messageParser(UnreceiptedReplaySchema, ({ since }) => {
  checkInstant('since', since)
})

function checkRange(from: string | undefined, to: string | undefined): void {
  const start = checkInstant('from', from)
  const end = checkInstant('to', to)
  if (start !== undefined && end !== undefined && start >= end) {
    throw new InvalidParameterError('from', 'must be before to')
  }
}

/** A query's fields, each given once: a repeated one arrives as an array. */
function givenOnce(query: unknown): Record<string, unknown> {
  for (const [name, value] of Object.entries(query ?? {})) {
    if (Array.isArray(value)) throw new InvalidParameterError(name, 'must be given once')
  }
  return (query ?? {}) as Record<string, unknown>
}

/** GET /deliveries's filter. */
export function deliveryListFilter(query: unknown): DeliveryFilter {
  return filterOf(deliveryListQuery.parse(givenOnce(query)), DEFAULT_DELIVERY_LIMIT)
}

/** GET /delivery-log's filter. */
export function deliveryLogFilter(query: unknown): DeliveryFilter {
  return filterOf(deliveryLogQuery.parse(givenOnce(query)), DEFAULT_LOG_LIMIT)
}

/** The bounds of a replayable count. */
export function replayableRange(query: unknown): { from: string; to: string } {
  return replayableQuery.parse(givenOnce(query))
}

function filterOf(
  text: Partial<Record<'enterpriseId' | 'audioId' | 'from' | 'to' | 'before' | 'limit', string>> & {
    state?: DeliveryFilter['state']
  },
  limit: number,
): DeliveryFilter {
  const filter: DeliveryFilter = { limit: text.limit === undefined ? limit : Number(text.limit) }
  if (text.enterpriseId !== undefined) filter.enterpriseId = Number(text.enterpriseId)
  if (text.state !== undefined) filter.state = text.state
  if (text.audioId !== undefined) filter.audioId = text.audioId
  if (text.from !== undefined) filter.from = text.from
  if (text.to !== undefined) filter.to = text.to
  if (text.before !== undefined) filter.before = Number(text.before)
  return filter
}
