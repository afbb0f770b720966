/**
 * Who the console is signed in as (GET /admin/v1/session: an operator, an API key or the break-glass
 * token), and what its role lets it do. Pages hide the controls a role may not use; the API refuses them
 * anyway (4031), and a page shows that refusal as it shows any other.
 */
import type { AdminAnswer } from './admin-client.js'
import { h } from './dom.js'

export type Session = AdminAnswer<'session'>

let signedIn: Session | null = null

export function setSession(session: Session | null): void {
  signedIn = session
}

export function session(): Session | null {
  return signedIn
}

/** Whether the signed-in role grants a permission (enterprises.read, secrets.read, …). */
export function may(permission: string): boolean {
  return signedIn?.permissions.includes(permission) === true
}

/** Whether the console runs in a session signed in with a password or single sign-on (not a key). */
export function inConsoleSession(): boolean {
  return signedIn?.csrfToken !== undefined
}

/** What a page says in place of its content when the role lacks the permission it needs. */
export function notGranted(permission: string, what: string): HTMLElement {
  return h(
    'p',
    { class: 'card', role: 'note' },
    `${what} needs the ${permission} permission, which the ${signedIn?.role ?? 'signed-in'} role does not grant: ask an owner for a role that does.`,
  )
}

/** The enterprises the signed-in role is limited to, as text: "every enterprise" when it is not. */
export function scopeText(enterprises: readonly number[] | null): string {
  if (enterprises === null) return 'every enterprise'
  if (enterprises.length === 0) return 'no enterprise'
  return `${enterprises.length === 1 ? 'enterprise' : 'enterprises'} ${enterprises.join(', ')}`
}
