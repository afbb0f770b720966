import { createHash } from 'node:crypto'
import type { PortalAccess } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'

/*
 * One-time links into the partner portal: minted by an operator or by the partner itself, spent by the first
 * GET, which opens a session. Only the SHA-256 of a link's secret part is stored.
 */

/** Links begin with this, so a leaked one is recognisable for what it is. */
const PORTAL_LINK_PREFIX = 'ptl_'

export interface PortalLinkGrant {
  enterpriseId: number
  access: PortalAccess
  /** An operator's read-only look at what the partner sees. */
  operatorView: boolean
  /** Who minted it, as the audit trail names them. */
  mintedBy: string
}

export interface MintedLink {
  url: string
  expiresAt: string
}

function linkHash(secret: string): Buffer {
  return createHash('sha256').update(secret).digest()
}

/** Mints a link valid for ttlSeconds from nowMs; its URL under baseUrl (the partner listener's public URL). */
export async function mintPortalLink(
  db: Queryable,
  grant: PortalLinkGrant,
  options: { baseUrl: string; ttlSeconds: number; nowMs: number; randomBytes: (size: number) => Buffer },
): Promise<MintedLink> {
  const secret = `${PORTAL_LINK_PREFIX}${options.randomBytes(32).toString('base64url')}`
  const [row] = await db.query<{ expiresAt: string }>(
    `INSERT INTO portal_links (link_hash, enterprise_id, access, operator_view, minted_by, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, to_timestamp($6::float8 / 1000), to_timestamp($6::float8 / 1000) + make_interval(secs => $7))
     RETURNING ${isoTime('expires_at')} AS "expiresAt"`,
    [
      linkHash(secret),
      grant.enterpriseId,
      grant.access,
      grant.operatorView,
      grant.mintedBy,
      options.nowMs,
      options.ttlSeconds,
    ],
  )
  return {
    url: `${options.baseUrl}/portal/enter/${secret}`,
    expiresAt: (row as { expiresAt: string }).expiresAt,
  }
}

/**
 * Spends a link: answers what it grants, once, while it has not expired and its enterprise is enabled;
 * undefined for a link spent, expired, unknown or of a disabled enterprise (one statement, so two
 * GETs of one link cannot both spend it).
 */
export async function spendPortalLink(
  db: Queryable,
  secret: string,
  nowMs: number,
): Promise<PortalLinkGrant | undefined> {
  const [row] = await db.query<PortalLinkGrant>(
    `UPDATE portal_links l SET spent_at = to_timestamp($2::float8 / 1000)
       FROM enterprises e
      WHERE l.link_hash = $1 AND l.spent_at IS NULL AND l.expires_at > to_timestamp($2::float8 / 1000)
        AND e.enterprise_id = l.enterprise_id AND e.disabled_at IS NULL
      RETURNING l.enterprise_id::int AS "enterpriseId", l.access, l.operator_view AS "operatorView",
                l.minted_by AS "mintedBy"`,
    [linkHash(secret), nowMs],
  )
  return row
}

/** Deletes links expired more than a day ago (spent or not); returns how many. */
export async function prunePortalLinks(db: Queryable, nowMs: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM portal_links WHERE expires_at < to_timestamp($1::float8 / 1000) - interval '1 day' RETURNING 1`,
    [nowMs],
  )
  return rows.length
}
