import { EVENT_TYPES, MAX_ENDPOINTS, type PushUrlState } from '@earshot/protocol'
import { cancelEndpointDeliveries, discardHeldDeliveries } from '../deliveries/delivery-cancellations.js'
import { resumeHeld } from '../deliveries/delivery-replays.js'
import { deliveryQueue } from '../deliveries/delivery-store.js'
import type { FirstEndpoint } from '../enterprises/enterprise-store.js'
import { pushUrlStateOf } from '../push-urls/push-url-health.js'
import type { EventType } from '../recordings/recording-events.js'
import type { Database, Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'

/*
 * An enterprise's push endpoints: each a URL, the event types it is subscribed to, and whether and how
 * fast the platform pushes to it. A removed endpoint keeps its row (its deliveries' history names it).
 */

export interface EndpointSettings {
  url: string
  eventTypes: EventType[]
  description: string
  enabled: boolean
  maxPerSecond: number | null
}

export interface EndpointView extends EndpointSettings {
  endpointId: number
  enterpriseId: number
  createdAt: string
  /** Its push URL's health (shared by every endpoint with that URL). */
  health: {
    state: PushUrlState
    reason: string | null
    lastSuccessAt: string | null
    lastFailureAt: string | null
  }
  /** Its deliveries waiting: pending, held or queued behind an earlier event of their recording. */
  waiting: number
}

interface EndpointRow extends Omit<EndpointView, 'health'> {
  consecutiveFailures: number | null
  failingSince: string | null
  lastError: string | null
  disabledAt: string | null
  disabledReason: string | null
  lastSuccessAt: string | null
  lastFailureAt: string | null
}

// Each count reads a partial index of the waiting state, never the endpoint's history.
const endpointsSql = (where: string) => `
  SELECT ep.endpoint_id AS "endpointId", ep.enterprise_id AS "enterpriseId", ep.url, ep.event_types AS "eventTypes",
         ep.description, ep.enabled, ep.max_per_second AS "maxPerSecond", ${isoTime('ep.created_at')} AS "createdAt",
         h.consecutive_failures AS "consecutiveFailures", ${isoTime('h.failing_since')} AS "failingSince",
         h.last_error AS "lastError", ${isoTime('h.disabled_at')} AS "disabledAt", h.disabled_reason AS "disabledReason",
         ${isoTime('h.last_success_at')} AS "lastSuccessAt", ${isoTime('h.last_failure_at')} AS "lastFailureAt",
         ((SELECT count(*) FROM deliveries WHERE group_key = ep.endpoint_id::text AND state = 'pending')
          + (SELECT count(*) FROM deliveries WHERE group_key = ep.endpoint_id::text AND state = 'held')
          + (SELECT count(*) FROM deliveries WHERE endpoint_id = ep.endpoint_id AND state = 'queued'))::int AS waiting
    FROM endpoints ep LEFT JOIN push_url_health h ON h.url = ep.url
   WHERE ep.removed_at IS NULL AND ${where}
   ORDER BY ep.enterprise_id, ep.endpoint_id`

function viewOf(row: EndpointRow): EndpointView {
  const { state, reason } = pushUrlStateOf(row)
  return {
    endpointId: Number(row.endpointId),
    enterpriseId: Number(row.enterpriseId),
    url: row.url,
    // text[] arrives parsed from PostgreSQL and from PGlite alike.
    eventTypes: EVENT_TYPES.filter((type) => row.eventTypes.includes(type)),
    description: row.description,
    enabled: row.enabled,
    maxPerSecond: row.maxPerSecond === null ? null : Number(row.maxPerSecond),
    createdAt: row.createdAt,
    health: { state, reason, lastSuccessAt: row.lastSuccessAt, lastFailureAt: row.lastFailureAt },
    waiting: Number(row.waiting),
  }
}

/** Every endpoint not removed, of one enterprise or of all. */
export async function listEndpoints(db: Queryable, enterpriseId?: number): Promise<EndpointView[]> {
  const rows =
    enterpriseId === undefined
      ? await db.query<EndpointRow>(endpointsSql('true'))
      : await db.query<EndpointRow>(endpointsSql('ep.enterprise_id = $1'), [enterpriseId])
  return rows.map(viewOf)
}

export async function getEndpoint(
  db: Queryable,
  enterpriseId: number,
  endpointId: number,
): Promise<EndpointView | undefined> {
  const [row] = await db.query<EndpointRow>(endpointsSql('ep.enterprise_id = $1 AND ep.endpoint_id = $2'), [
    enterpriseId,
    endpointId,
  ])
  return row && viewOf(row)
}

/** Why an endpoint could not be added (or its URL changed). */
export type NotAdded = 'no-enterprise' | 'too-many' | 'url-of-another'

/**
 * How a change chooses its URL: `ownUrl` refuses a URL another enterprise's endpoint has (a partner's own
 * change: it must neither read another's URL health nor count its failures against it); operators may share.
 */
export interface UrlRule {
  ownUrl?: boolean
}

/**
 * Whether another enterprise has an endpoint at the URL, asked under a transaction lock on the URL that
 * every such question takes: of two partners adding one URL at once, the second sees the first's.
 */
async function urlOfAnother(tx: Queryable, enterpriseId: number, url: string): Promise<boolean> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('endpoint url ' || $1))", [url])
  const rows = await tx.query(
    'SELECT 1 FROM endpoints WHERE url = $1 AND enterprise_id <> $2 AND removed_at IS NULL LIMIT 1',
    [url, enterpriseId],
  )
  return rows.length > 0
}

/**
 * Adds an endpoint, or says why not: the enterprise's row is locked, so that two adds at once cannot pass
 * MAX_ENDPOINTS together — NO KEY UPDATE, which a scheduling's foreign key check (KEY SHARE) does not wait for.
 */
export async function addEndpoint(
  db: Database,
  enterpriseId: number,
  settings: EndpointSettings,
  rule: UrlRule = {},
): Promise<EndpointView | NotAdded> {
  return db.transaction(async (tx) => {
    const [enterprise] = await tx.query<{ endpoints: number }>(
      `SELECT (SELECT count(*) FROM endpoints WHERE enterprise_id = e.enterprise_id AND removed_at IS NULL)::int AS endpoints
         FROM enterprises e WHERE e.enterprise_id = $1 FOR NO KEY UPDATE`,
      [enterpriseId],
    )
    if (!enterprise) return 'no-enterprise'
    if (enterprise.endpoints >= MAX_ENDPOINTS) return 'too-many'
    if (rule.ownUrl && (await urlOfAnother(tx, enterpriseId, settings.url))) return 'url-of-another'
    const endpointId = await insertEndpoint(tx, enterpriseId, settings)
    return (await getEndpoint(tx, enterpriseId, endpointId)) as EndpointView
  })
}

/** A new enterprise's push URL, its one endpoint for every event type (enterprises/ calls it on creation). */
export const addFirstEndpoint: FirstEndpoint = async (tx, enterpriseId, url) => {
  await insertEndpoint(tx, enterpriseId, { url, ...EVERY_EVENT_ENABLED })
}

const EVERY_EVENT_ENABLED = {
  eventTypes: [...EVENT_TYPES],
  description: '',
  enabled: true,
  maxPerSecond: null,
}

async function insertEndpoint(
  tx: Queryable,
  enterpriseId: number,
  settings: EndpointSettings,
): Promise<number> {
  const [row] = await tx.query<{ endpoint_id: number }>(
    `INSERT INTO endpoints (enterprise_id, url, event_types, description, enabled, max_per_second)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING endpoint_id`,
    [
      enterpriseId,
      settings.url,
      settings.eventTypes,
      settings.description,
      settings.enabled,
      settings.maxPerSecond,
    ],
  )
  return Number(row?.endpoint_id)
}

/** An endpoint as an update left it, and how many held deliveries `discardHeld` cancelled. */
export interface UpdatedEndpoint {
  endpoint: EndpointView
  discarded: number
}

/**
 * Changes an endpoint's settings. Its open deliveries stay its own: to a new URL they go there; enabled
 * again, those it held resume in due order (disabled, the push queue holds them, and new events' deliveries
 * are created held) — or, with discardHeld, those it held and those queued behind them are cancelled
 * instead. Undefined when the enterprise has no such endpoint. The endpoint's row is locked FOR UPDATE,
 * against the KEY SHARE a scheduling or a sweep deciding "held" takes on it (scheduleDeliveries): one in
 * progress commits before this does, so that the resume after it sees what it held.
 */
export async function updateEndpoint(
  db: Database,
  enterpriseId: number,
  endpointId: number,
  changes: Partial<EndpointSettings>,
  options: { discardHeld?: boolean } & UrlRule = {},
): Promise<UpdatedEndpoint | 'url-of-another' | undefined> {
  const updated = await db.transaction(async (tx) => {
    const locked = await tx.query(
      'SELECT 1 FROM endpoints WHERE enterprise_id = $1 AND endpoint_id = $2 AND removed_at IS NULL FOR UPDATE',
      [enterpriseId, endpointId],
    )
    if (locked.length === 0) return undefined
    if (options.ownUrl && changes.url !== undefined && (await urlOfAnother(tx, enterpriseId, changes.url)))
      return 'url-of-another'
    await tx.query(
      `UPDATE endpoints SET url = coalesce($2, url), event_types = coalesce($3, event_types),
              description = coalesce($4, description), enabled = coalesce($5, enabled),
              max_per_second = CASE WHEN $6 THEN $7 ELSE max_per_second END
        WHERE endpoint_id = $1`,
      [
        endpointId,
        changes.url ?? null,
        changes.eventTypes ?? null,
        changes.description ?? null,
        changes.enabled ?? null,
        changes.maxPerSecond !== undefined,
        changes.maxPerSecond ?? null,
      ],
    )
    return { discarded: options.discardHeld ? await discardHeldDeliveries(tx, endpointId) : 0 }
  })
  if (updated === undefined || updated === 'url-of-another') return updated
  await resumeHeld(db, [endpointId])
  // A rate lifted or raised lets deliveries due now go: dispatchers asleep until the old rate's next
  // attempt time are woken, rather than finding them at their next poll.
  if (changes.maxPerSecond !== undefined) await deliveryQueue.notify(db)
  return { endpoint: (await getEndpoint(db, enterpriseId, endpointId)) as EndpointView, ...updated }
}

/**
 * Removes an endpoint: no event is pushed to it any more, and its deliveries not yet confirmed are
 * cancelled (an attempt on the wire ends as it ends). Undefined when the enterprise has no such endpoint.
 */
export async function removeEndpoint(
  db: Database,
  enterpriseId: number,
  endpointId: number,
): Promise<{ cancelled: number } | undefined> {
  return db.transaction((tx) => removeEndpointIn(tx, enterpriseId, endpointId))
}

/** removeEndpoint, in the caller's transaction. */
export async function removeEndpointIn(
  tx: Queryable,
  enterpriseId: number,
  endpointId: number,
): Promise<{ cancelled: number } | undefined> {
  const rows = await tx.query(
    'SELECT 1 FROM endpoints WHERE enterprise_id = $1 AND endpoint_id = $2 AND removed_at IS NULL FOR UPDATE',
    [enterpriseId, endpointId],
  )
  if (rows.length === 0) return undefined
  return { cancelled: await removeIn(tx, endpointId) }
}

/**
 * The one-endpoint shorthand (`set-push-url`): the enterprise's endpoints become one, to `url`, for every
 * event type, enabled, without a rate. Its first endpoint is kept (changed), so that its open deliveries go
 * to the new URL; the others are removed. A null URL removes them all. Returns how many deliveries the
 * removed endpoints had not yet confirmed (now cancelled); undefined when there is no such enterprise.
 */
export async function replaceWithPushUrl(
  db: Database,
  enterpriseId: number,
  url: string | null,
): Promise<{ cancelled: number } | undefined> {
  const replaced = await db.transaction(async (tx) => {
    const [enterprise] = await tx.query<{ endpoints: (number | string)[] | null }>(
      `SELECT (SELECT array_agg(endpoint_id ORDER BY endpoint_id) FROM endpoints
                WHERE enterprise_id = e.enterprise_id AND removed_at IS NULL) AS endpoints
         FROM enterprises e WHERE e.enterprise_id = $1 FOR NO KEY UPDATE`,
      [enterpriseId],
    )
    if (!enterprise) return undefined
    // Each locked as an update or a removal locks it (updateEndpoint), in id order.
    await tx.query(
      'SELECT 1 FROM endpoints WHERE endpoint_id = ANY($1::int8[]) ORDER BY endpoint_id FOR UPDATE',
      [enterprise.endpoints ?? []],
    )
    const [first, ...others] = (enterprise.endpoints ?? []).map(Number)
    let cancelled = 0
    for (const endpointId of url === null ? [first, ...others] : others) {
      if (endpointId !== undefined) cancelled += await removeIn(tx, endpointId)
    }
    if (url === null) return { kept: [], cancelled }
    const settings = { url, ...EVERY_EVENT_ENABLED }
    if (first === undefined) return { kept: [await insertEndpoint(tx, enterpriseId, settings)], cancelled }
    await tx.query(
      `UPDATE endpoints SET url = $2, event_types = $3, enabled = true, max_per_second = NULL WHERE endpoint_id = $1`,
      [first, url, settings.eventTypes],
    )
    return { kept: [first], cancelled }
  })
  if (!replaced) return undefined
  await resumeHeld(db, replaced.kept)
  return { cancelled: replaced.cancelled }
}

async function removeIn(tx: Queryable, endpointId: number): Promise<number> {
  await tx.query('UPDATE endpoints SET removed_at = now() WHERE endpoint_id = $1', [endpointId])
  return cancelEndpointDeliveries(tx, endpointId)
}
