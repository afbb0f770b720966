import type { PushUrlState } from '@earshot/protocol'
import {
  countHeld,
  replayFailedSince,
  replayFailedSinceEach,
  resumeHeld,
} from '../deliveries/delivery-replays.js'
import type { Database, Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'

/*
 * The health of every push URL: `healthy`; `failing` once an attempt failed; `disabled`
 * after EARSHOT_PUSH_DISABLE_AFTER of failures with no success in between, or at once when the partner
 * answers 410 Gone. A success makes a failing URL healthy again; a disabled one stays disabled (an
 * attempt still in flight when it was disabled may succeed) until an operator enables it. Several
 * enterprises may share a push URL: health is the URL's, and disabling it holds the deliveries of every
 * enterprise pushing to it — kept pending, in due order, never dropped.
 */

/** How one attempt went for its push URL. */
export interface PushUrlOutcome {
  url: string
  /** Epoch milliseconds: when the attempt ended. */
  at: number
  ok: boolean
  /** The partner answered 410 Gone: the URL is disabled at once. */
  gone?: boolean
  error?: string | undefined
}

/** One URL's outcomes of a batch, in the order they ended. */
interface Summary {
  url: string
  /** Failures after the last success of the batch (all of them when there was none). */
  failures: number
  failingSince: number | null
  lastSuccessAt: number | null
  lastFailureAt: number | null
  lastError: string | null
  goneAt: number | null
}

function summarize(outcomes: readonly PushUrlOutcome[]): Summary[] {
  const byUrl = new Map<string, Summary>()
  for (const outcome of [...outcomes].sort((a, b) => a.at - b.at)) {
    let summary = byUrl.get(outcome.url)
    if (!summary) {
      summary = {
        url: outcome.url,
        failures: 0,
        failingSince: null,
        lastSuccessAt: null,
        lastFailureAt: null,
        lastError: null,
        goneAt: null,
      }
      byUrl.set(outcome.url, summary)
    }
    if (outcome.ok) {
      summary.lastSuccessAt = outcome.at
      summary.failures = 0
      summary.failingSince = null
    } else {
      summary.failures++
      summary.failingSince ??= outcome.at
      summary.lastFailureAt = outcome.at
      summary.lastError = outcome.error ?? null
      if (outcome.gone) summary.goneAt = outcome.at
    }
  }
  return [...byUrl.values()]
}

/** The window's reason, given the SQL of the instant the URL has been failing since. */
const windowReason = (failingSince: string, lastError: string) =>
  `'failing since ' || ${isoTime(failingSince)} || ' for longer than EARSHOT_PUSH_DISABLE_AFTER (' || $8::float8 || ' s)'
   || coalesce('; last: ' || ${lastError}, '')`

// x: the batch's summary of a URL as a row of its own (what the URL's row would be without a past);
// p: the row as it was. A success in the batch starts the count of failures afresh — unless the URL is
// disabled (an attempt in flight when it was disabled may succeed): enabling it must still replay what
// went failed since it began failing.
const recovers = 'p.disabled_at IS NULL AND EXCLUDED.last_success_at IS NOT NULL'
const failingSince = `CASE WHEN ${recovers} THEN EXCLUDED.failing_since
                           ELSE coalesce(p.failing_since, EXCLUDED.failing_since) END`
const overdue = (since: string, lastFailure: string) =>
  `${since} <= ${lastFailure} - make_interval(secs => $8::float8)`

const recordSql = `WITH b AS (
     SELECT x.url, x.failures, to_timestamp(x.failing_ms / 1000) AS failing_since,
            to_timestamp(x.success_ms / 1000) AS last_success_at, to_timestamp(x.failure_ms / 1000) AS last_failure_at,
            x.last_error, to_timestamp(x.gone_ms / 1000) AS gone_at
       FROM unnest($1::text[], $2::int[], $3::float8[], $4::float8[], $5::float8[], $6::text[], $7::float8[])
         AS x(url, failures, failing_ms, success_ms, failure_ms, last_error, gone_ms)),
   prior AS (SELECT url, disabled_at FROM push_url_health WHERE url IN (SELECT url FROM b)),
   recorded AS (
     INSERT INTO push_url_health AS p (url, consecutive_failures, failing_since, last_success_at, last_failure_at,
                                      last_error, disabled_at, disabled_reason)
     SELECT b.url, b.failures, b.failing_since, b.last_success_at, b.last_failure_at, b.last_error,
            CASE WHEN b.gone_at IS NOT NULL THEN b.gone_at
                 WHEN ${overdue('b.failing_since', 'b.last_failure_at')} THEN b.last_failure_at END,
            CASE WHEN b.gone_at IS NOT NULL THEN 'HTTP 410 Gone at ' || ${isoTime('b.gone_at')}
                 WHEN ${overdue('b.failing_since', 'b.last_failure_at')}
                 THEN ${windowReason('b.failing_since', 'b.last_error')} END
       FROM b ORDER BY b.url
     ON CONFLICT (url) DO UPDATE SET
       consecutive_failures = CASE WHEN ${recovers} THEN EXCLUDED.consecutive_failures
                                   ELSE p.consecutive_failures + EXCLUDED.consecutive_failures END,
       failing_since = ${failingSince},
       last_success_at = greatest(p.last_success_at, EXCLUDED.last_success_at),
       last_failure_at = greatest(p.last_failure_at, EXCLUDED.last_failure_at),
       last_error = coalesce(EXCLUDED.last_error, p.last_error),
       disabled_at = coalesce(p.disabled_at, EXCLUDED.disabled_at,
                              CASE WHEN ${overdue(failingSince, 'EXCLUDED.last_failure_at')}
                                   THEN EXCLUDED.last_failure_at END),
       disabled_reason = CASE WHEN p.disabled_at IS NOT NULL THEN p.disabled_reason
                              WHEN EXCLUDED.disabled_at IS NOT NULL THEN EXCLUDED.disabled_reason
                              WHEN ${overdue(failingSince, 'EXCLUDED.last_failure_at')}
                              THEN ${windowReason(`(${failingSince})`, 'EXCLUDED.last_error')} END
     RETURNING p.url, p.disabled_at, p.disabled_reason)
   SELECT r.url, r.disabled_reason AS reason FROM recorded r LEFT JOIN prior USING (url)
    WHERE r.disabled_at IS NOT NULL AND prior.disabled_at IS NULL`

/** What recording a batch of outcomes did to their URLs. */
export interface Recorded {
  /** The URLs it disabled, with why. */
  disabled: { url: string; reason: string }[]
  /**
   * The URLs that recovered by themselves (an acknowledged push while failing, not disabled), with how many
   * deliveries to them that went failed since they began failing are pending again.
   */
  recovered: { url: string; replayed: number }[]
}

/**
 * Records a batch of attempts' outcomes in the health of their URLs, in one transaction. Times are the
 * platform's clock (epoch ms), as the outcomes give them. A URL recovering by itself replays, as enabling
 * it does, the deliveries to it that went failed since it began failing: in the same transaction, its row
 * locked first (as enabling locks it), so that of two instances recording its recovery at once only the
 * first replays, and a stop between the two steps cannot lose the replay.
 */
export async function recordPushUrlOutcomes(
  db: Database,
  outcomes: readonly PushUrlOutcome[],
  disableAfterSeconds: number,
): Promise<Recorded> {
  if (outcomes.length === 0) return { disabled: [], recovered: [] }
  const batch = summarize(outcomes)
  const column = <T>(pick: (s: Summary) => T) => batch.map(pick)
  return db.transaction(async (tx) => {
    const prior = await tx.query<{ url: string; failing_since_ms: number }>(
      `SELECT url, extract(epoch FROM failing_since)::float8 * 1000 AS failing_since_ms FROM push_url_health
        WHERE url = ANY($1::text[]) ORDER BY url FOR NO KEY UPDATE`,
      [column((s) => s.url)],
    )
    const disabled = await tx.query<{ url: string; reason: string }>(recordSql, [
      column((s) => s.url),
      column((s) => s.failures),
      column((s) => s.failingSince),
      column((s) => s.lastSuccessAt),
      column((s) => s.lastFailureAt),
      column((s) => s.lastError),
      column((s) => s.goneAt),
      disableAfterSeconds,
    ])
    return { disabled, recovered: await replayRecovered(tx, prior, batch) }
  })
}

/**
 * Replays, for each URL of the batch that recovered by itself (a success while failing, not disabled), the
 * deliveries to it that went failed since it began failing: all the URLs' in one id order (the lock order).
 */
async function replayRecovered(
  tx: Queryable,
  prior: readonly { url: string; failing_since_ms: number | null }[],
  batch: readonly Summary[],
): Promise<Recorded['recovered']> {
  const urls = prior.filter(
    ({ url, failing_since_ms: since }) =>
      since !== null && batch.some((s) => s.url === url && s.lastSuccessAt !== null),
  )
  if (urls.length === 0) return []
  const rows = await tx.query<{ url: string; endpoint_id: number | null; since_ms: number }>(
    `SELECT h.url, ep.endpoint_id, u.since_ms FROM unnest($1::text[], $2::float8[]) AS u(url, since_ms)
       JOIN push_url_health h ON h.url = u.url AND h.disabled_at IS NULL
       LEFT JOIN endpoints ep ON ep.url = h.url AND ep.removed_at IS NULL
      ORDER BY h.url, ep.endpoint_id`,
    [urls.map((u) => u.url), urls.map((u) => u.failing_since_ms)],
  )
  const endpoints = rows.flatMap((r) =>
    r.endpoint_id === null ? [] : [{ endpointId: Number(r.endpoint_id), sinceMs: Number(r.since_ms) }],
  )
  const replayed = await replayFailedSinceEach(tx, endpoints)
  const byUrl = new Map<string, number>()
  for (const r of rows) {
    const n = r.endpoint_id === null ? 0 : (replayed.get(Number(r.endpoint_id)) ?? 0)
    byUrl.set(r.url, (byUrl.get(r.url) ?? 0) + n)
  }
  return [...byUrl].map(([url, n]) => ({ url, replayed: n }))
}

async function endpointsOf(db: Queryable, url: string): Promise<number[]> {
  const rows = await db.query<{ endpoint_id: number }>(
    'SELECT endpoint_id FROM endpoints WHERE url = $1 AND removed_at IS NULL ORDER BY endpoint_id',
    [url],
  )
  return rows.map((row) => Number(row.endpoint_id))
}

export interface PushUrlView {
  url: string
  state: PushUrlState
  /** Why it is disabled, or what is failing; null when healthy. */
  reason: string | null
  failingSince: string | null
  lastSuccessAt: string | null
  lastFailureAt: string | null
  /** Failed attempts since the last success (or since it was enabled). */
  consecutiveFailures: number
  disabledAt: string | null
  /** The enterprises pushing to it now. */
  enterprises: number[]
}

interface PushUrlRow {
  url: string
  consecutiveFailures: number | null
  failingSince: string | null
  lastSuccessAt: string | null
  lastFailureAt: string | null
  lastError: string | null
  disabledAt: string | null
  disabledReason: string | null
  enterprises: number[] | string | null
}

// Every URL with a health record or an enterprise pushing to it; one without a record is healthy.
const endpointsSql = `WITH urls AS (
     SELECT url FROM push_url_health WHERE $1::text IS NULL OR url = $1
     UNION
     SELECT url FROM endpoints WHERE removed_at IS NULL AND ($1::text IS NULL OR url = $1))
   SELECT u.url, p.consecutive_failures AS "consecutiveFailures", ${isoTime('p.failing_since')} AS "failingSince",
          ${isoTime('p.last_success_at')} AS "lastSuccessAt", ${isoTime('p.last_failure_at')} AS "lastFailureAt",
          p.last_error AS "lastError", ${isoTime('p.disabled_at')} AS "disabledAt", p.disabled_reason AS "disabledReason",
          (SELECT json_agg(DISTINCT ep.enterprise_id ORDER BY ep.enterprise_id) FROM endpoints ep WHERE ep.url = u.url AND ep.removed_at IS NULL)
            AS enterprises
     FROM urls u LEFT JOIN push_url_health p ON p.url = u.url
    ORDER BY u.url`

/** A push URL's state, and why when it is not healthy, from its health record (none: healthy). */
export function pushUrlStateOf(health: {
  consecutiveFailures: number | null
  failingSince: string | null
  lastError: string | null
  disabledAt: string | null
  disabledReason: string | null
}): { state: PushUrlState; reason: string | null } {
  const failures = health.consecutiveFailures ?? 0
  if (health.disabledAt !== null) return { state: 'disabled', reason: health.disabledReason }
  if (failures === 0) return { state: 'healthy', reason: null }
  const reason =
    `${failures} failed ${failures === 1 ? 'attempt' : 'attempts in a row'} since ${health.failingSince}` +
    (health.lastError === null ? '' : `; last: ${health.lastError}`)
  return { state: 'failing', reason }
}

function viewOf(row: PushUrlRow): PushUrlView {
  // json_agg arrives parsed from PostgreSQL, as text from PGlite.
  const enterprises = typeof row.enterprises === 'string' ? JSON.parse(row.enterprises) : row.enterprises
  return {
    url: row.url,
    ...pushUrlStateOf(row),
    failingSince: row.failingSince,
    lastSuccessAt: row.lastSuccessAt,
    lastFailureAt: row.lastFailureAt,
    consecutiveFailures: row.consecutiveFailures ?? 0,
    disabledAt: row.disabledAt,
    enterprises: enterprises ?? [],
  }
}

/** Every push URL in use or with a health record, by URL. */
export async function listPushUrls(db: Queryable): Promise<PushUrlView[]> {
  return (await db.query<PushUrlRow>(endpointsSql, [null])).map(viewOf)
}

export async function getPushUrl(db: Queryable, url: string): Promise<PushUrlView | undefined> {
  const [row] = await db.query<PushUrlRow>(endpointsSql, [url])
  return row && viewOf(row)
}

/** What enabling a push URL put back in the queue. */
export interface Enabled {
  /** Deliveries it held, pending again in due order (a retry still waiting for its time is due now). */
  resumed: number
  /** Deliveries to it that went failed since it began failing, pending again with a fresh schedule. */
  replayed: number
}

/**
 * Makes a push URL healthy again, then puts back in the queue the deliveries of every enterprise pushing
 * to it that it held, and those that went failed since it began failing (their retry schedule ran out
 * during the outage). Undefined when no enterprise pushes to it and it has no record. The URL's row is
 * locked FOR UPDATE, against the KEY SHARE a scheduling or a sweep deciding "held" takes on it: one in
 * progress commits first, and the resume, after this commits, sees what it held (or it waits, and sees the
 * URL enabled). The failed ones are replayed in the enable's transaction, with failing_since cleared: an
 * enable that stops half-way has replayed them or not cleared it. The held ones are resumed after it, a
 * batch per statement; should that stop half-way, the queue's sweep resumes the rest (REPAIR_SQL).
 */
export async function enablePushUrl(db: Database, url: string): Promise<Enabled | undefined> {
  const enabled = await db.transaction(async (tx) => {
    const [old] = await tx.query<{ failing_since_ms: number | null }>(
      `SELECT extract(epoch FROM failing_since)::float8 * 1000 AS failing_since_ms FROM push_url_health
        WHERE url = $1 FOR UPDATE`,
      [url],
    )
    const endpoints = await endpointsOf(tx, url)
    if (!old && endpoints.length === 0) return undefined
    await tx.query(
      `UPDATE push_url_health SET consecutive_failures = 0, failing_since = NULL, disabled_at = NULL,
                                  disabled_reason = NULL
        WHERE url = $1`,
      [url],
    )
    const since = old?.failing_since_ms ?? null
    const replayed = since === null ? 0 : await replayFailedSince(tx, endpoints, since)
    // Counted as enabled: once this commits, a dispatcher's sweep may resume some before resumeHeld does.
    return { endpoints, replayed, resumed: await countHeld(tx, endpoints) }
  })
  if (!enabled) return undefined
  await resumeHeld(db, enabled.endpoints)
  return { resumed: enabled.resumed, replayed: enabled.replayed }
}

/** A push URL as metrics and logs show it: without its query and fragment, which may carry a secret. */
export function urlLabel(url: string): string {
  if (!URL.canParse(url)) return '(invalid URL)'
  const { protocol, host, pathname } = new URL(url)
  return `${protocol}//${host}${pathname}`
}
