/**
 * The portal session the page runs in, and what it may do: a `view` session, or any operator's view, reads
 * only; the page hides its change controls and says why (the portal refuses them anyway, 4031).
 */
import { count, h } from './dom.js'
import type { PortalSession } from './page-constants.js'

let current: PortalSession | null = null

export function setSession(session: PortalSession | null): void {
  current = session
}

export function session(): PortalSession | null {
  return current
}

/** Whether this session may change the enterprise's integration (endpoints, replays, checks, its key). */
export function mayChange(): boolean {
  return current?.access === 'manage' && !current.operatorView
}

/** What a section says in place of its change controls in a session that may only read. */
export function readOnlyNote(what: string): HTMLElement {
  const why = current?.operatorView
    ? 'This is an operator view of the portal: it reads only.'
    : 'This portal session can view only: ask for a manage link to change anything.'
  return h('p', { class: 'card read-only-note', role: 'note' }, `${what}: ${why}`)
}

/**
 * The enterprise's retention policy, as the session read it: recordings older than it are erased by the
 * platform, and pushed to the partner's endpoints as deleted.
 */
export function retentionNote(): HTMLElement {
  const days = current?.retentionDays ?? null
  return h(
    'p',
    { class: 'card', id: 'retention-policy', role: 'note' },
    h('strong', {}, 'Retention: '),
    days === null
      ? 'No retention policy: your recordings are kept until they are deleted.'
      : `Recordings are erased ${count(days, 'day')} after they were recorded; each is then pushed to you as recording.deleted.`,
  )
}
