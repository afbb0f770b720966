import { timingSafeEqual } from 'node:crypto'
import type { Queryable } from '../storage/database.js'
import { digestOf } from './secrets.js'

/**
 * A single sign-on between its start and the provider's redirect back: the state sent to the provider,
 * the PKCE verifier and nonce the answer is checked with, and the redirect URI the code was issued for.
 * Kept in the database (any instance may take the callback), keyed by the state's SHA-256, for one use
 * within STATE_SECONDS; and bound to the browser that began it by a cookie holding the state, so that a
 * callback link made by someone else (login CSRF) signs nobody in.
 */
export interface PendingSignIn {
  codeVerifier: string
  nonce: string
  redirectUri: string
}

export const STATE_SECONDS = 600
export const STATE_COOKIE = 'earshot_sso'
const COOKIE_PATH = '/admin/v1/sso'

export async function savePendingSignIn(
  tx: Queryable,
  state: string,
  pending: PendingSignIn,
  now: number,
): Promise<void> {
  await tx.query('DELETE FROM sso_sign_ins WHERE expires_at < $1', [new Date(now).toISOString()])
  await tx.query(
    `INSERT INTO sso_sign_ins (state_hash, code_verifier, nonce, redirect_uri, expires_at)
     VALUES ($1, $2, $3, $4, $5)`,
    [
      digestOf(state),
      pending.codeVerifier,
      pending.nonce,
      pending.redirectUri,
      new Date(now + STATE_SECONDS * 1000).toISOString(),
    ],
  )
}

/** The sign-in a state began, taken for its one use; undefined when unknown, used or expired. */
export async function takePendingSignIn(
  tx: Queryable,
  state: string,
  now: number,
): Promise<PendingSignIn | undefined> {
  const [row] = await tx.query<PendingSignIn & { expiresAt: Date | string }>(
    `DELETE FROM sso_sign_ins WHERE state_hash = $1
     RETURNING code_verifier AS "codeVerifier", nonce, redirect_uri AS "redirectUri", expires_at AS "expiresAt"`,
    [digestOf(state)],
  )
  if (!row || new Date(row.expiresAt).getTime() <= now) return undefined
  return { codeVerifier: row.codeVerifier, nonce: row.nonce, redirectUri: row.redirectUri }
}

/**
 * The cookie binding a sign-in to its browser: SameSite=Lax, since the provider's redirect back is a
 * navigation from another site, which would not carry a Strict cookie; only the single sign-on routes see it.
 */
export function stateCookie(state: string, secure: boolean): string {
  return [
    `${STATE_COOKIE}=${state}`,
    `Path=${COOKIE_PATH}`,
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${state === '' ? 0 : STATE_SECONDS}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ')
}

/** Whether the state the provider sent back is the one this browser's cookie holds. */
export function stateMatchesCookie(state: string, cookieHeader: string | undefined): boolean {
  const held = cookieValue(cookieHeader, STATE_COOKIE)
  return held !== undefined && timingSafeEqual(digestOf(held), digestOf(state))
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return value.join('=') || undefined
  }
  return undefined
}
