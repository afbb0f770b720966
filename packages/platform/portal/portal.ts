/*
 * Earshot's partner portal: one static page, these modules and its stylesheets, served by the partner
 * listener at /portal/ (packages/platform/src/portal/portal-page.ts). A partner enters it through a one-time
 * link, which opens a session for one enterprise (its cookie HttpOnly, its CSRF token kept in memory). This
 * module is the shell: the session in the bar, the sections and the hash routes; each section is a module
 * of its own (endpoints.ts, deliveries.ts, check.ts, levels.ts, key.ts) built from the DOM helpers it shares
 * with the operators' console (dom.js and others, served from the console's compiled modules) and
 * portal-api.ts. Pages are built with DOM calls, never HTML strings, so what a receiver answered is always
 * text. Nothing comes from another origin: uPlot, the chart library, is served by the platform too.
 */
import { check } from './check.js'
import { deliveries } from './deliveries.js'
import { h, heading, nameTheApi, stamp } from './dom.js'
import { endpoints } from './endpoints.js'
import { key } from './key.js'
import { levels } from './levels.js'
import { stopRefreshing } from './navigation.js'
import type { PortalSession } from './page-constants.js'
import { Refusal, readSession, signOut, whenEnded } from './portal-api.js'
import { setSession } from './portal-session.js'

/** An element of index.html. */
function byId(id: string): HTMLElement {
  const element = document.getElementById(id)
  if (!element) throw new Error(`index.html has no #${id}`)
  return element
}

const main = byId('main')
const nav = byId('nav')
const account = byId('account')
const who = byId('who')
const banner = byId('banner')
const signOutButton = byId('sign-out') as HTMLButtonElement

/** A section: drawn in the view from its route's parameters; `current` is false once the partner left it. */
type Section = (view: HTMLElement, params: URLSearchParams, current: () => boolean) => Promise<void> | void

const sections: Record<string, Section> = { endpoints, deliveries, check, levels, key }

/** Bumped on every navigation, and when the session ends: work of a section left since draws nothing. */
let renderId = 0
let stopped = false
let expiryTimer: ReturnType<typeof setTimeout> | undefined

function route() {
  const hash = location.hash.startsWith('#/') ? location.hash.slice(2) : 'endpoints'
  const [name = '', query = ''] = hash.split('?', 2)
  return { name, params: new URLSearchParams(query) }
}

async function render(): Promise<void> {
  if (stopped) return
  stopRefreshing()
  const id = ++renderId
  const current = () => id === renderId && !stopped
  const { name, params } = route()
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  const view = h('div', { class: 'page' })
  main.replaceChildren(view)
  const section = sections[name] ?? notFound
  const done = section(view, params, current)
  view.querySelector('h1')?.focus()
  await done
}

/** The bar: the enterprise, the session's access and when it expires; the banner of an operator's view. */
function showSession(session: PortalSession): void {
  const access = session.operatorView ? 'operator view' : session.access
  who.replaceChildren(
    h('span', { class: 'visually-hidden' }, 'Enterprise '),
    h('span', { class: 'who-name', id: 'enterprise-name' }, session.enterpriseName),
    ' ',
    h('span', { class: `badge access-${session.access}`, id: 'session-access' }, access),
    ' ',
    h('small', { class: 'who-scope', id: 'session-expiry' }, 'session ends ', stamp(session.expiresAt)),
  )
  who.title = `enterprise ${session.enterpriseId}`
  document.title = `${session.enterpriseName} · Earshot partner portal`
  banner.hidden = !session.operatorView
  nav.hidden = false
  account.hidden = false
  clearTimeout(expiryTimer)
  // When the session expires, asking for it again gets the refusal that ends the page.
  const left = new Date(session.expiresAt).getTime() - Date.now()
  if (left > 0 && left < 2 ** 31)
    expiryTimer = setTimeout(() => void readSession().catch(() => {}), left + 1000)
}

/** Stops the page: nothing is drawn or asked any more, and the partner is told what to do. */
function stop(title: string, detail: string): void {
  stopped = true
  renderId++
  stopRefreshing()
  clearTimeout(expiryTimer)
  setSession(null)
  nav.hidden = true
  account.hidden = true
  for (const dialog of document.querySelectorAll('dialog')) dialog.close()
  const view = h(
    'div',
    { class: 'page narrow card', id: 'portal-stopped' },
    heading(title),
    h('p', {}, detail),
    h(
      'p',
      { class: 'muted' },
      'A link into the portal works once and expires: your own dashboard can mint one (the partner API’s portal/link, or earshot-partner portal), or ask your Earshot operator for one.',
    ),
  )
  main.replaceChildren(view)
  view.querySelector('h1')?.focus()
}

function ended(message: string): void {
  stop('Your portal session has ended — open a new link', `The portal said: ${message}`)
}

async function start(): Promise<void> {
  try {
    const session = await readSession()
    setSession(session)
    showSession(session)
    await render()
  } catch (error) {
    // A 4010 has already stopped the page (whenEnded).
    if (error instanceof Refusal && stopped) return
    stop(
      'The portal could not open',
      error instanceof Refusal
        ? `${error.msg} (${error.code ?? 'no code'}, HTTP ${error.status})`
        : `The portal could not be reached: ${(error as Error | undefined)?.message ?? error}`,
    )
  }
}

async function signOutNow(): Promise<void> {
  signOutButton.disabled = true
  try {
    await signOut()
    stop('Signed out of the portal', 'This session is ended: its cookie no longer opens the portal.')
  } catch (error) {
    if (stopped) return
    signOutButton.disabled = false
    const reason = error instanceof Refusal ? error.msg : (error as Error).message
    main.prepend(h('p', { class: 'alert', role: 'alert' }, `Could not sign out: ${reason}`))
  }
}

function notFound(view: HTMLElement): void {
  view.append(heading('No such section'), h('p', {}, h('a', { href: '#/endpoints' }, 'Go to the endpoints')))
}

nameTheApi('The portal')
whenEnded(ended)
signOutButton.addEventListener('click', () => void signOutNow())
document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault()
  main.focus()
})
window.addEventListener('hashchange', () => void render())
void start()
