/** The admin API as the console calls it: the session's token, operations by name, refusals in the API's words. */
import { AdminApiError, AdminClient } from './admin-client.js'

const TOKEN_KEY = 'earshot.adminToken'

/** A refusal by the admin API: its code, msg and HTTP status. */
export const Refusal = AdminApiError

let onUnauthorized = () => {}
/** What the console does when the API stops accepting the session's token (it signs out). */
export function whenUnauthorized(handler) {
  onUnauthorized = handler
}
export const unauthorized = (message) => onUnauthorized(message)

export function storeToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value)
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY)
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY)
}

/** The admin client of this listener, with the session's token or the one given. */
export function adminClient(adminToken = token()) {
  return new AdminClient(location.origin, adminToken)
}

/**
 * Calls an operation of the admin API; resolves with its answer or rejects with a Refusal. A 401 in a
 * session means the token was changed on the platform: the console signs out and says so.
 */
export function api(operationId, request) {
  return withClient((client) => client.call(operationId, request))
}

/** Runs work with the session's client (its typed methods, e.g. uploadAudio), a 401 handled as api() does. */
export async function withClient(work) {
  try {
    return await work(adminClient())
  } catch (error) {
    if (error instanceof Refusal && error.status === 401) {
      unauthorized(`The admin API no longer accepts this token: ${error.msg}`)
    }
    throw error
  }
}

export async function enterpriseOptions() {
  const { enterprises } = await api('listEnterprises')
  return enterprises
}
