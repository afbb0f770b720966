/**
 * The admin API as the console calls it: with the console session's cookie and CSRF token, or with an API
 * key kept in the tab; operations by name, refusals in the API's words.
 */
import {
  type AdminAnswer,
  AdminApiError,
  AdminClient,
  type AdminOperationId,
  type AdminRequestArgs,
  type Enterprise,
} from './admin-client.js'

/** The API key (or the break-glass token) of a tab signed in with one: sessionStorage, gone with the tab. */
const KEY_ITEM = 'earshot.adminToken'
/**
 * Whether this browser has signed in to a console session, for a new tab to ask the API who it is: the
 * session's cookie is HttpOnly, so the page cannot see it. Holds no secret (localStorage: shared by tabs).
 */
const SESSION_HINT = 'earshot.session'

/** A refusal by the admin API: its code, msg and HTTP status. */
export { AdminApiError as Refusal }

/** The console session's CSRF token, answered by sign-in, setup and the session: kept in memory only. */
let csrfToken: string | null = null

let onUnauthorized = (_message: string) => {}
/** What the console does when the API stops accepting its credentials (it signs out). */
export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler
}
export const unauthorized = (message: string) => onUnauthorized(message)

/** Signs the tab in with an API key: sent as a bearer header from now on. */
export function storeToken(value: string): void {
  forgetCredentials()
  sessionStorage.setItem(KEY_ITEM, value)
}

/** Signs the tab in to a console session: its cookie is set; its CSRF token goes with every change. */
export function useSession(csrf: string | undefined): void {
  sessionStorage.removeItem(KEY_ITEM)
  localStorage.setItem(SESSION_HINT, '1')
  csrfToken = csrf ?? null
}

/** Expects a console session when the page loads next (single sign-on sets its cookie, then comes back). */
export function expectSession(): void {
  localStorage.setItem(SESSION_HINT, '1')
}

export function forgetCredentials(): void {
  sessionStorage.removeItem(KEY_ITEM)
  localStorage.removeItem(SESSION_HINT)
  csrfToken = null
}

export function token(): string | null {
  return sessionStorage.getItem(KEY_ITEM)
}

/** Whether the console has credentials to try: an API key, or a session it signed in to. */
export function mayBeSignedIn(): boolean {
  return token() !== null || localStorage.getItem(SESSION_HINT) !== null
}

/**
 * The admin client of this listener: with an API key, its bearer header; in a console session, no header
 * but the x-csrf-token on every change (fetch sends the same-origin cookie itself: credentials
 * 'same-origin' is its default).
 */
class ConsoleClient extends AdminClient {
  constructor(private readonly key: string | null) {
    super(location.origin, key ?? '')
  }

  override prepare<Id extends AdminOperationId>(operationId: Id, ...args: AdminRequestArgs<Id>) {
    const prepared = super.prepare(operationId, ...args)
    if (this.key !== null) return prepared
    const { authorization: _none, ...headers } = prepared.headers
    if (prepared.method !== 'GET' && csrfToken !== null) headers['x-csrf-token'] = csrfToken
    return { ...prepared, headers }
  }
}

/** The admin client of this listener, with the tab's API key or the one given; else the console session. */
export function adminClient(adminToken = token()): AdminClient {
  return new ConsoleClient(adminToken)
}

/**
 * Calls an operation of the admin API; resolves with its answer or rejects with a Refusal. A 401 means the
 * key was revoked or the session ended (signed out everywhere, expired): the console signs out and says so.
 */
export function api<Id extends AdminOperationId>(
  operationId: Id,
  ...request: AdminRequestArgs<Id>
): Promise<AdminAnswer<Id>> {
  return withClient((client) => client.call(operationId, ...request))
}

/** Runs work with the session's client (its typed methods, e.g. uploadAudio), a 401 handled as api() does. */
export async function withClient<T>(work: (client: AdminClient) => Promise<T>): Promise<T> {
  try {
    return await work(adminClient())
  } catch (error) {
    if (error instanceof AdminApiError && error.status === 401) {
      unauthorized(
        token() === null
          ? `Your console session has ended: ${error.msg}`
          : `The admin API no longer accepts this key: ${error.msg}`,
      )
    }
    throw error
  }
}

/** Who is signed in, or null when the API knows no one by these credentials (nothing is forgotten here). */
export async function whoIsSignedIn(): Promise<AdminAnswer<'session'> | null> {
  try {
    const session = await adminClient().call('session')
    if (token() === null) csrfToken = session.csrfToken ?? null
    return session
  } catch (error) {
    if (error instanceof AdminApiError && error.status === 401) return null
    throw error
  }
}

export async function enterpriseOptions(): Promise<Enterprise[]> {
  const { enterprises } = await api('listEnterprises')
  return enterprises
}
