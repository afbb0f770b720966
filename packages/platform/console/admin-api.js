/** The admin API as the console calls it: the session's token, JSON calls, refusals in the API's words. */

const TOKEN_KEY = 'earshot.adminToken'
export const API = '/admin/v1'

/** A refusal by the admin API, in its words: {code, msg}. */
export class Refusal extends Error {
  constructor(status, body) {
    super(typeof body?.msg === 'string' ? body.msg : `the admin API answered HTTP ${status}`)
    this.status = status
    this.code = body?.code
  }
}

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

/**
 * Calls the admin API; resolves with the JSON answer or rejects with a Refusal. A 401 in a session
 * means the token was changed on the platform: the console signs out and says so.
 */
export async function api(method, path, body) {
  const headers = { authorization: `Bearer ${token()}` }
  const init = { method, headers }
  if (body !== undefined) {
    headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const response = await fetch(`${API}${path}`, init)
  const answer = await response.json().catch(() => undefined)
  if (!response.ok) {
    const refusal = new Refusal(response.status, answer)
    if (response.status === 401)
      unauthorized(`The admin API no longer accepts this token: ${refusal.message}`)
    throw refusal
  }
  return answer
}

export async function enterpriseOptions() {
  const { enterprises } = await api('GET', '/enterprises')
  return enterprises
}
