/** The admin API as the console calls it: the session's token, operations by name, refusals in the API's words. */
import {
  type AdminAnswer,
  AdminApiError,
  AdminClient,
  type AdminOperationId,
  type AdminRequestArgs,
  type Enterprise,
} from './admin-client.js'

const TOKEN_KEY = 'earshot.adminToken'

/** A refusal by the admin API: its code, msg and HTTP status. */
export { AdminApiError as Refusal }

let onUnauthorized = (_message: string) => {}
/** What the console does when the API stops accepting the session's token (it signs out). */
export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler
}
export const unauthorized = (message: string) => onUnauthorized(message)

export function storeToken(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value)
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY)
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY)
}

/** The admin client of this listener, with the session's token or the one given. */
export function adminClient(adminToken = token()): AdminClient {
  return new AdminClient(location.origin, adminToken ?? '')
}

/**
 * Calls an operation of the admin API; resolves with its answer or rejects with a Refusal. A 401 in a
 * session means the token was changed on the platform: the console signs out and says so.
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
      unauthorized(`The admin API no longer accepts this token: ${error.msg}`)
    }
    throw error
  }
}

export async function enterpriseOptions(): Promise<Enterprise[]> {
  const { enterprises } = await api('listEnterprises')
  return enterprises
}
