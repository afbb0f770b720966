import assert from 'node:assert/strict'
import type { TestPlatform } from '@earshot/test-kit/backends'
import { adminCall } from '@earshot/test-kit/calls'

/**
 * What the portal's tests share: a link minted by an operator, entered as a browser enters it (the
 * redirect not followed, its cookie kept), and the portal's JSON routes called with that cookie.
 */

export interface PortalAnswer {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

export interface PortalSessionAnswer {
  sessionId: number
  enterpriseId: number
  enterpriseName: string
  retentionDays: number | null
  access: 'view' | 'manage'
  operatorView: boolean
  expiresAt: string
  csrfToken: string
}

/** A browser in the portal: its cookie and session, and the portal's routes called as its page calls them. */
export interface Visit {
  cookie: string
  session: PortalSessionAnswer
  /** POST /portal/api/<path> with the session's CSRF token (unless `csrf` says otherwise). */
  post(path: string, body?: unknown, csrf?: string | null): Promise<PortalAnswer>
}

/** A link an operator (the break-glass key) mints into an enterprise's portal. */
export async function mintLink(
  platform: TestPlatform,
  enterpriseId: number,
  access: 'view' | 'manage' = 'view',
): Promise<string> {
  const minted = await adminCall(platform, 'createPortalLink', { params: { enterpriseId }, body: { access } })
  return minted.url
}

/** GET of a portal link on the partner listener, the redirect not followed. */
export function openLink(platform: TestPlatform, url: string): Promise<Response> {
  const { pathname } = new URL(url)
  return fetch(`${platform.partnerUrl}${pathname}`, { redirect: 'manual' })
}

/** A call of the portal's JSON API with a cookie (or none). */
export async function portalCall(
  platform: TestPlatform,
  method: 'GET' | 'POST',
  path: string,
  options: { cookie?: string; csrf?: string | null; body?: unknown } = {},
): Promise<PortalAnswer> {
  const response = await fetch(`${platform.partnerUrl}/portal/api/${path}`, {
    method,
    headers: {
      ...(options.cookie && { cookie: options.cookie }),
      ...(options.csrf && { 'x-csrf-token': options.csrf }),
      ...(method === 'POST' && { 'content-type': 'application/json' }),
    },
    ...(method === 'POST' && { body: JSON.stringify(options.body ?? {}) }),
  })
  const body = (await response.json()) as Record<string, unknown>
  return { status: response.status, headers: response.headers, body }
}

/** Enters the portal with a link, as a browser does: its session cookie, then its session. */
export async function visit(platform: TestPlatform, url: string): Promise<Visit> {
  const entered = await openLink(platform, url)
  assert.equal(entered.status, 303, await entered.text())
  const setCookie = entered.headers.get('set-cookie') ?? ''
  const cookie = setCookie.split(';', 1)[0] as string
  const answer = await portalCall(platform, 'GET', 'session', { cookie })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  const session = answer.body as unknown as PortalSessionAnswer
  return {
    cookie,
    session,
    post: (path, body, csrf) =>
      portalCall(platform, 'POST', path, {
        cookie,
        body,
        csrf: csrf === undefined ? session.csrfToken : csrf,
      }),
  }
}

/** Asserts a portal refusal: its code, the catalogue's HTTP status, a message matching `msg`, a request id. */
export function refused(answer: PortalAnswer, code: number, msg?: RegExp): void {
  assert.equal(answer.body.code, code, JSON.stringify(answer.body))
  assert.equal(answer.status, Math.floor(code / 10))
  assert.equal(typeof answer.body.requestId, 'string')
  if (msg) assert.match(answer.body.msg as string, msg)
}
