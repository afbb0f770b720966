import type { PortalAccess } from '@earshot/protocol'
import { digestOf, newSecret } from '../access/secrets.js'
import type { Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'
import { type PortalLinkGrant, prunePortalLinks } from './portal-links.js'

/*
 * Portal sessions: opened by spending a one-time link, for one enterprise, until they expire or are ended
 * (by the partner signing out, or an operator). Only the SHA-256 of a session's cookie is stored.
 */

/** Session cookies begin with this, so a leaked one is recognisable for what it is. */
const PORTAL_SESSION_PREFIX = 'pts_'

/** A session's last use is written at most this often: a request reads its session, it rarely writes it. */
const TOUCH_EVERY_MS = 60_000

/** A portal session as the portal's own routes know it. */
export interface PortalSession {
  sessionId: number
  enterpriseId: number
  enterpriseName: string
  /** Its recordings are erased this many days after they were recorded; null: kept until deleted. */
  retentionDays: number | null
  access: PortalAccess
  operatorView: boolean
  expiresAt: string
  csrfToken: string
}

/** A portal session as operators list it. */
export interface PortalSessionRow {
  sessionId: number
  enterpriseId: number
  access: PortalAccess
  operatorView: boolean
  mintedBy: string
  createdAt: string
  lastSeenAt: string
  expiresAt: string
  endedAt: string | null
  address: string | null
  userAgent: string | null
}

/** What a session looks up to: the session, or why there is none. */
type SessionLookup = PortalSession | 'unknown' | 'ended' | 'expired' | 'disabled'

const at = (ms: number) => new Date(ms).toISOString()

const ROW_COLUMNS = `session_id::int AS "sessionId", enterprise_id::int AS "enterpriseId", access,
  operator_view AS "operatorView", minted_by AS "mintedBy", ${isoTime('created_at')} AS "createdAt",
  ${isoTime('last_seen_at')} AS "lastSeenAt", ${isoTime('expires_at')} AS "expiresAt",
  CASE WHEN ended_at IS NULL THEN NULL ELSE ${isoTime('ended_at')} END AS "endedAt", address,
  user_agent AS "userAgent"`

/** Opens a session for what a link granted, in the caller's transaction: its cookie's value and the session. */
export async function openPortalSession(
  tx: Queryable,
  grant: PortalLinkGrant,
  options: {
    nowMs: number
    ttlSeconds: number
    randomBytes: (size: number) => Buffer
    address: string | null
    userAgent: string | null
  },
): Promise<{ token: string; sessionId: number; expiresAt: string }> {
  const token = newSecret(options.randomBytes, PORTAL_SESSION_PREFIX)
  const csrfToken = newSecret(options.randomBytes)
  const [row] = await tx.query<{ sessionId: number; expiresAt: string }>(
    `INSERT INTO portal_sessions (token_hash, enterprise_id, access, operator_view, minted_by, csrf_token,
       created_at, last_seen_at, expires_at, address, user_agent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10)
     RETURNING session_id::int AS "sessionId", ${isoTime('expires_at')} AS "expiresAt"`,
    [
      digestOf(token),
      grant.enterpriseId,
      grant.access,
      grant.operatorView,
      grant.mintedBy,
      csrfToken,
      at(options.nowMs),
      at(options.nowMs + options.ttlSeconds * 1000),
      options.address,
      options.userAgent,
    ],
  )
  const opened = row as { sessionId: number; expiresAt: string }
  return { token, ...opened }
}

/**
 * The session a cookie stands for, with its enterprise's name; or why none: unknown, ended, expired, or
 * its enterprise disabled. Read on every request, so an ended session is refused at once on every
 * instance; its last use is written at most once a minute.
 */
export async function portalSessionOf(db: Queryable, token: string, nowMs: number): Promise<SessionLookup> {
  const hash = digestOf(token)
  const [row] = await db.query<
    PortalSession & { ended: boolean; expiresMs: number; lastSeenMs: number; disabled: boolean }
  >(
    `SELECT s.session_id::int AS "sessionId", s.enterprise_id::int AS "enterpriseId", e.name AS "enterpriseName",
       e.retention_days AS "retentionDays", s.access, s.operator_view AS "operatorView", ${isoTime('s.expires_at')} AS "expiresAt",
       s.csrf_token AS "csrfToken", s.ended_at IS NOT NULL AS ended, e.disabled_at IS NOT NULL AS disabled,
       (extract(epoch FROM s.expires_at) * 1000)::float8 AS "expiresMs",
       (extract(epoch FROM s.last_seen_at) * 1000)::float8 AS "lastSeenMs"
     FROM portal_sessions s JOIN enterprises e USING (enterprise_id)
     WHERE s.token_hash = $1`,
    [hash],
  )
  if (!row) return 'unknown'
  if (row.ended) return 'ended'
  if (Number(row.expiresMs) <= nowMs) return 'expired'
  if (row.disabled) return 'disabled'
  if (nowMs - Number(row.lastSeenMs) >= TOUCH_EVERY_MS) {
    await db.query('UPDATE portal_sessions SET last_seen_at = $2 WHERE token_hash = $1', [hash, at(nowMs)])
  }
  const { ended: _e, disabled: _d, expiresMs: _x, lastSeenMs: _l, ...session } = row
  return session
}

/** Ends a session by its cookie (signing out); whether it was open. */
export async function endPortalSessionByToken(db: Queryable, token: string, nowMs: number): Promise<boolean> {
  const ended = await db.query(
    'UPDATE portal_sessions SET ended_at = $2 WHERE token_hash = $1 AND ended_at IS NULL RETURNING 1',
    [digestOf(token), at(nowMs)],
  )
  return ended.length > 0
}

/**
 * Ends a session by its id (an operator's), one already ended staying as it was; the session as it is
 * now, or undefined when there is none in the scope (null: every enterprise).
 */
export async function endPortalSession(
  db: Queryable,
  sessionId: number,
  nowMs: number,
  scope: readonly number[] | null,
): Promise<PortalSessionRow | undefined> {
  const [row] = await db.query<PortalSessionRow>(
    `UPDATE portal_sessions SET ended_at = COALESCE(ended_at, $2)
      WHERE session_id = $1 AND ($3::bigint[] IS NULL OR enterprise_id = ANY($3::bigint[]))
      RETURNING ${ROW_COLUMNS}`,
    [sessionId, at(nowMs), scope],
  )
  return row
}

/** The newest sessions first (at most 500), of one enterprise or all, within a scope (null: every enterprise). */
export async function listPortalSessions(
  db: Queryable,
  filter: { enterpriseId?: number | undefined; scope: readonly number[] | null },
): Promise<PortalSessionRow[]> {
  return db.query<PortalSessionRow>(
    `SELECT ${ROW_COLUMNS} FROM portal_sessions
      WHERE ($1::bigint IS NULL OR enterprise_id = $1)
        AND ($2::bigint[] IS NULL OR enterprise_id = ANY($2::bigint[]))
      ORDER BY session_id DESC LIMIT 500`,
    [filter.enterpriseId ?? null, filter.scope],
  )
}

/** Deletes sessions ended or expired more than a day ago (kept that long for operators to see); how many. */
async function prunePortalSessions(db: Queryable, nowMs: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM portal_sessions WHERE expires_at < $1 OR ended_at < $1 RETURNING 1`,
    [at(nowMs - 86_400_000)],
  )
  return rows.length
}

/** The janitor's share: links and sessions expired (or ended) more than a day ago; how many of each. */
export async function prunePortal(
  db: Queryable,
  nowMs: number,
): Promise<{ links: number; sessions: number }> {
  return { links: await prunePortalLinks(db, nowMs), sessions: await prunePortalSessions(db, nowMs) }
}
