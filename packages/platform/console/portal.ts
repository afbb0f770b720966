/**
 * The partner portal, as operators reach it: on the enterprises page, a one-time link into an enterprise's
 * portal for its partner (view or manage, shown to copy) and a read-only look at what the partner sees (a
 * new tab); and the portal sessions page (#/portal, or #/portal?enterpriseId=N), each session endable.
 */
import { api } from './admin-api.js'
import type { AdminAnswer, Enterprise } from './admin-client.js'
import {
  alertBox,
  badge,
  cell,
  confirmDialog,
  h,
  heading,
  label,
  showError,
  stamp,
  statusBox,
  table,
} from './dom.js'
import { may, notGranted } from './session.js'
import { showOnce } from './shown-once.js'

type PortalSession = AdminAnswer<'listPortalSessions'>['sessions'][number]

/** Where the enterprises page shows what the portal's controls did. */
export interface PortalTarget {
  /** The panel a minted link is shown in, to copy. */
  panel: HTMLElement
  status: HTMLElement
  alert: HTMLElement
}

/** The portal's controls of an enterprise's row: a link for its partner, a look at what it sees, its sessions. */
export function portalControls(target: PortalTarget, e: Enterprise): HTMLDetailsElement | false {
  if (!may('portal.view')) return false
  return h(
    'details',
    {},
    h('summary', {}, 'Portal'),
    h(
      'div',
      { class: 'inline-form' },
      may('portal.manage') && partnerLinkForm(target, e),
      h(
        'button',
        {
          type: 'button',
          'aria-label': `See what the partner of enterprise ${e.enterpriseId} sees, read-only, in a new tab`,
          onclick: () => lookAsPartner(target, e),
        },
        'See what the partner sees',
      ),
      h(
        'a',
        { href: `#/portal?${new URLSearchParams({ enterpriseId: String(e.enterpriseId) })}` },
        `Portal sessions of enterprise ${e.enterpriseId}`,
      ),
    ),
  )
}

/** Access (view or manage) and the button that mints the link and shows it to copy. */
function partnerLinkForm(target: PortalTarget, e: Enterprise): HTMLFormElement {
  const id = `portal-access-${e.enterpriseId}`
  const access = h(
    'select',
    { id },
    h('option', { value: 'view' }, 'view: reads only'),
    h('option', { value: 'manage' }, 'manage: may change endpoints and rotate the key'),
  )
  return h(
    'form',
    {
      class: 'inline-form',
      onsubmit: async (event) => {
        event.preventDefault()
        target.alert.replaceChildren()
        try {
          const body = { access: access.value as 'view' | 'manage' }
          const minted = await api('createPortalLink', { params: { enterpriseId: e.enterpriseId }, body })
          showOnce(target.panel, {
            id: 'portal-link',
            title: `A ${body.access} link into the portal of enterprise ${e.enterpriseId}`,
            note: `Hand it to the partner: it opens the portal once, until ${new Date(minted.expiresAt).toLocaleString()}.`,
            label: 'Portal link',
            value: minted.url,
            copyLabel: 'Copy link',
          })
        } catch (error) {
          showError(target.alert, error)
        }
      },
    },
    label(id, `Portal access for enterprise ${e.enterpriseId}`),
    access,
    h('button', { type: 'submit', class: 'primary' }, 'Portal link'),
  )
}

/** Mints an operator's view and opens it in a new tab; the link stays in the status, should the tab be blocked. */
async function lookAsPartner(target: PortalTarget, e: Enterprise): Promise<void> {
  target.alert.replaceChildren()
  try {
    const minted = await api('createOperatorViewLink', { params: { enterpriseId: e.enterpriseId } })
    window.open(minted.url, '_blank', 'noopener,noreferrer')
    target.status.replaceChildren(
      `What enterprise ${e.enterpriseId}'s partner sees opened in a new tab, read-only. No tab? `,
      h('a', { href: minted.url, target: '_blank', rel: 'noopener noreferrer' }, 'Open it'),
      ' (once).',
    )
  } catch (error) {
    showError(target.alert, error)
  }
}

const COLUMNS = [
  'ID',
  'Enterprise',
  'Access',
  'State',
  'Opened',
  'Last seen',
  'Expires',
  'Minted by',
  'Address',
  'Actions',
] as const

/** The portal sessions page: every enterprise's, or one's; an open session may be ended. */
export async function portalSessions(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  const enterpriseId = params.get('enterpriseId') ?? undefined
  const title = enterpriseId ? `Portal sessions of enterprise ${enterpriseId}` : 'Portal sessions'
  document.title = `${title} · Earshot console`
  view.append(heading(title))
  if (!may('portal.view')) {
    view.append(notGranted('portal.view', 'Seeing portal sessions'))
    return
  }
  const alert = alertBox()
  const status = statusBox()
  const listing = h('div', { class: 'listing' })
  const load = async () => {
    try {
      const query = enterpriseId === undefined ? {} : { enterpriseId }
      const { sessions } = await api('listPortalSessions', { query })
      if (current()) listing.replaceChildren(sessionTable(sessions, { alert, status, load }))
    } catch (error) {
      if (current()) showError(alert, error)
    }
  }
  view.append(
    h('p', {}, 'Sessions opened by portal links, newest first; ended or expired ones stay listed for a day.'),
    status,
    alert,
    listing,
  )
  await load()
}

interface Listing {
  alert: HTMLElement
  status: HTMLElement
  load(): Promise<void>
}

function stateOf(session: PortalSession): string {
  if (session.endedAt !== null) return 'ended'
  return Date.parse(session.expiresAt) <= Date.now() ? 'expired' : 'open'
}

function sessionTable(sessions: readonly PortalSession[], listing: Listing): HTMLElement {
  if (sessions.length === 0) return h('p', {}, 'No portal session.')
  return table(
    'Portal sessions',
    COLUMNS,
    sessions.map((s) => {
      const state = stateOf(s)
      return h(
        'tr',
        { id: `portal-session-${s.sessionId}` },
        cell(COLUMNS[0], String(s.sessionId)),
        cell(COLUMNS[1], String(s.enterpriseId)),
        cell(COLUMNS[2], s.operatorView ? 'operator view' : s.access),
        cell(COLUMNS[3], badge(state === 'open' ? 'active' : state)),
        cell(COLUMNS[4], stamp(s.createdAt)),
        cell(COLUMNS[5], stamp(s.lastSeenAt)),
        cell(COLUMNS[6], stamp(s.expiresAt)),
        cell(COLUMNS[7], h('span', { class: 'mono' }, s.mintedBy)),
        cell(COLUMNS[8], s.address ?? ''),
        cell(COLUMNS[9], state === 'open' && may('portal.manage') && endButton(s, listing)),
      )
    }),
  )
}

function endButton(s: PortalSession, listing: Listing): HTMLButtonElement {
  const end = async () => {
    const confirmed = await confirmDialog({
      title: `End portal session ${s.sessionId}?`,
      message: `Its next request is refused, on every instance. The partner of enterprise ${s.enterpriseId} needs a new portal link to come back.`,
      confirmLabel: 'End',
      danger: true,
    })
    if (!confirmed) return
    listing.alert.replaceChildren()
    try {
      await api('endPortalSession', { params: { sessionId: s.sessionId } })
      listing.status.textContent = `Portal session ${s.sessionId} is ended.`
      await listing.load()
    } catch (error) {
      showError(listing.alert, error)
    }
  }
  return h(
    'button',
    { type: 'button', class: 'danger', 'aria-label': `End portal session ${s.sessionId}`, onclick: end },
    'End',
  )
}
