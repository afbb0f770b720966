import type { Database, Queryable } from '../storage/database.js'
import type { Principal } from './principal.js'
import type { Role } from './roles.js'
import { digestOf, newSecret } from './secrets.js'

export const SESSION_COOKIE = 'earshot_session'

export interface SessionLifetimes {
  idleSeconds: number
  maxSeconds: number
}

/** Starts a console session: its cookie's value and the CSRF token every change must carry. */
export async function startSession(
  tx: Queryable,
  operatorId: number,
  now: number,
  randomBytes: (size: number) => Buffer,
): Promise<{ token: string; csrfToken: string }> {
  const token = newSecret(randomBytes)
  const csrfToken = newSecret(randomBytes)
  const at = new Date(now).toISOString()
  await tx.query(
    `INSERT INTO operator_sessions (session_hash, operator_id, csrf_token, created_at, last_seen_at)
     VALUES ($1, $2, $3, $4, $4)`,
    [digestOf(token), operatorId, csrfToken, at],
  )
  return { token, csrfToken }
}

/**
 * The operator a session cookie stands for, or undefined: unknown, ended, idle or older than its lifetimes
 * allow, or its operator disabled. Looked up on every request, so a session ended on one instance is
 * refused by every other at once. Its last use is recorded at most every 15 s.
 */
export async function sessionPrincipal(
  db: Queryable,
  token: string,
  now: number,
  lifetimes: SessionLifetimes,
): Promise<Principal | undefined> {
  const hash = digestOf(token)
  const [row] = await db.query<{
    operatorId: number
    email: string
    name: string
    role: Role
    enterprises: number[] | null
    csrfToken: string
    createdAt: Date | string
    lastSeenAt: Date | string
  }>(
    `SELECT o.operator_id AS "operatorId", o.email, o.name, o.role, o.enterprises, s.csrf_token AS "csrfToken",
       s.created_at AS "createdAt", s.last_seen_at AS "lastSeenAt"
     FROM operator_sessions s JOIN operators o USING (operator_id)
     WHERE s.session_hash = $1 AND s.ended_at IS NULL AND o.enabled`,
    [hash],
  )
  if (!row) return undefined
  const lastSeen = new Date(row.lastSeenAt).getTime()
  if (
    now - lastSeen > lifetimes.idleSeconds * 1000 ||
    now - new Date(row.createdAt).getTime() > lifetimes.maxSeconds * 1000
  ) {
    return undefined
  }
  if (now - lastSeen > 15_000) {
    await db.query('UPDATE operator_sessions SET last_seen_at = $2 WHERE session_hash = $1', [
      hash,
      new Date(now).toISOString(),
    ])
  }
  return {
    actor: { kind: 'operator', id: `operator:${row.operatorId}`, name: row.name || row.email },
    role: row.role,
    enterprises: row.enterprises?.map(Number) ?? null,
    csrfToken: row.csrfToken,
    operatorId: row.operatorId,
    sessionHash: hash,
  }
}

export async function endSession(db: Database, sessionHash: Buffer): Promise<void> {
  await db.transaction((tx) =>
    tx.query('UPDATE operator_sessions SET ended_at = now() WHERE session_hash = $1 AND ended_at IS NULL', [
      sessionHash,
    ]),
  )
}

/** Ends every session of an operator, in the caller's transaction: signing out everywhere, or a disable. */
export async function endOperatorSessions(tx: Queryable, operatorId: number): Promise<number> {
  const ended = await tx.query(
    'UPDATE operator_sessions SET ended_at = now() WHERE operator_id = $1 AND ended_at IS NULL RETURNING 1',
    [operatorId],
  )
  return ended.length
}

/** The cookie that carries a session: HttpOnly, SameSite=Strict, Secure behind TLS, for the admin listener. */
export function sessionCookie(token: string, secure: boolean, maxAgeSeconds: number): string {
  return [
    `${SESSION_COOKIE}=${token}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeSeconds}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ')
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', secure, 0)
}

/** The session token of a Cookie header, if any. */
export function sessionToken(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=')
    if (name === SESSION_COOKIE) return value.join('=') || undefined
  }
  return undefined
}
