/**
 * The portal's JSON routes as the page calls them: /portal/api/<action> with the same plain JSON a sealed
 * partner request holds, answered with the same object; the session's cookie goes along by itself (same
 * origin), its CSRF token (kept in memory) as x-csrf-token on every POST. A refusal is {code, msg,
 * requestId}. A 4010 to the session's GET means the session has ended, and the page stops (whenEnded); a
 * POST's 4010 may instead be its CSRF token's (a token the page lost or never read): the session is read
 * again, and the POST sent once more with its token only if the session is still open.
 */
import {
  PORTAL_ACTIONS,
  type PortalAction,
  type PortalActions,
  type PortalSession,
  SESSION_REFUSED,
} from './page-constants.js'

/** A refusal by the portal: its code, msg and HTTP status, as the page shows them (dom.ts's showError). */
export class Refusal extends Error {
  constructor(
    readonly code: number | null,
    readonly msg: string,
    readonly requestId: string | undefined,
    readonly status: number,
  ) {
    super(`error ${code}: ${msg}`)
    this.name = 'Refusal'
  }
}

let csrfToken: string | null = null
/** Once the session has ended, nothing is sent any more: the page says so and stops. */
let ended = false
let onEnded = (_message: string) => {}

/** What the page does when the session has ended or expired (it stops and says to open a new link). */
export function whenEnded(handler: (message: string) => void): void {
  onEnded = handler
}

async function send(method: 'GET' | 'POST', path: string, body?: unknown, again = false): Promise<unknown> {
  if (ended) throw new Refusal(SESSION_REFUSED, 'the portal session has ended', undefined, 401)
  const headers: Record<string, string> = { accept: 'application/json' }
  if (method === 'POST') {
    headers['content-type'] = 'application/json'
    if (csrfToken !== null) headers['x-csrf-token'] = csrfToken
  }
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  if (response.ok && parsed !== undefined) return parsed
  const refusal = refusalOf(response.status, parsed)
  if (!unauthorized(refusal)) throw refusal
  if (method === 'GET') {
    endSession(refusal.msg)
    throw refusal
  }
  if (again) throw refusal
  // Reading the session tells an ended one (the page stops) from a CSRF token the page did not have.
  await readSession()
  return send(method, path, body, true)
}

/** A refused answer as its Refusal. */
function refusalOf(status: number, parsed: unknown): Refusal {
  const { code, msg, requestId } = (parsed ?? {}) as { code?: unknown; msg?: unknown; requestId?: unknown }
  return new Refusal(
    typeof code === 'number' ? code : null,
    typeof msg === 'string' ? msg : `the portal answered HTTP ${status} with no refusal in JSON`,
    typeof requestId === 'string' ? requestId : undefined,
    status,
  )
}

/** A 4010 (or a 401 without a code): no session, or not this request's CSRF token. */
function unauthorized(refusal: Refusal): boolean {
  return refusal.code === SESSION_REFUSED || (refusal.code === null && refusal.status === 401)
}

function endSession(message: string): void {
  ended = true
  csrfToken = null
  onEnded(message)
}

/** The session this page runs in (its cookie's); keeps its CSRF token for the changes to come. */
export async function readSession(): Promise<PortalSession> {
  const session = (await send('GET', '/portal/api/session')) as PortalSession
  csrfToken = session.csrfToken
  return session
}

/**
 * Calls an action of the portal (by its operationId) with its plain JSON body; resolves with its answer or
 * rejects with a Refusal.
 */
export function call<Action extends PortalAction>(
  action: Action,
  body: PortalActions[Action][0],
): Promise<PortalActions[Action][1]> {
  return send('POST', `/portal/api/${PORTAL_ACTIONS[action]}`, body) as Promise<PortalActions[Action][1]>
}

/** Ends the session: its cookie no longer opens the portal. */
export async function signOut(): Promise<void> {
  await send('POST', '/portal/api/sign-out', {})
  ended = true
  csrfToken = null
}
