/*
 * Earshot's operator console: one static page, these modules and one stylesheet, served by the platform's
 * admin listener at /console (packages/platform/src/console/console-assets.ts). This module is the shell:
 * who is signed in, the navigation bar and the hash routes; signing in is sign-in.ts and setup.ts, and each
 * page is a module of its own (overview.ts, enterprises.ts, endpoints.ts, recordings.ts, deliveries.ts,
 * import.ts, operators.ts, keys.ts, audit.ts, portal.ts, erasures.ts) built from dom.ts and admin-api.ts.
 *
 * Why this stack: the console is a handful of forms and tables over the admin API, used by few people
 * on a loopback or VPN listener. Plain DOM calls cover that in a few readable files; a framework would add
 * a dependency tree to keep current and a bundle to ship, for no feature the pages need. `tsc -b` compiles
 * them as it compiles the rest (console/tsconfig.json), one ES module per file, no bundler: the browser
 * loads them as they come out, and the admin API's calls are typed by its contracts.
 * Nothing is fetched from elsewhere (no CDN, no fonts), so the console works offline and its content
 * security policy allows this origin only; the one exception is media: the recordings page plays stored
 * audio from its signed link on the partner listener, another origin. Pages are built with DOM calls,
 * never HTML strings, so names and messages from the API are always text.
 *
 * Operators sign in with their email and password (or single sign-on): a console session, its cookie
 * HttpOnly and SameSite=Strict, each change carrying its CSRF token (kept in memory) as x-csrf-token. An API
 * key or the break-glass token may sign a tab in instead: it lives in sessionStorage (gone with the tab) and
 * goes out only as `Authorization: Bearer` on API calls, never in a URL or a cookie. The role decides what
 * the pages show (session.ts); the API decides what it allows. Pages are hash routes (#/overview,
 * #/deliveries?state=failed, …), so a filter can be linked without a server round trip.
 */
import {
  adminClient,
  forgetCredentials,
  mayBeSignedIn,
  token,
  whenUnauthorized,
  whoIsSignedIn,
} from './admin-api.js'
import { audit } from './audit.js'
import { deliveries } from './deliveries.js'
import { h, heading } from './dom.js'
import { endpoints } from './endpoints.js'
import { enterprises } from './enterprises.js'
import { erasures } from './erasures.js'
import { importPage } from './import.js'
import { keys } from './keys.js'
import { stopRefreshing } from './navigation.js'
import { operators } from './operators.js'
import { overview } from './overview.js'
import { portalSessions } from './portal.js'
import { recordings } from './recordings.js'
import { inConsoleSession, may, type Session, scopeText, session, setSession } from './session.js'
import { setupPage, setupToken } from './setup.js'
import { signInPage } from './sign-in.js'

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
const signOutButton = byId('sign-out')
const signOutEverywhereButton = byId('sign-out-everywhere')

/** Bumped on every navigation: work started for a page that was left since then renders nothing. */
let renderId = 0
/** Whether this tab last signed in with an API key: signed out, it offers the key form again. */
let signedInWithKey = false

function route() {
  // The overview covers every enterprise: one limited to some lands on its enterprises instead.
  const landing = may('operations.read') ? 'overview' : 'enterprises'
  const hash = location.hash.startsWith('#/') ? location.hash.slice(2) : landing
  const [name = '', query = ''] = hash.split('?', 2)
  return { name, params: new URLSearchParams(query) }
}

/** A page: drawn in the view, from the parameters of its route; `current` is false once the operator left it. */
type Page = (view: HTMLElement, params: URLSearchParams, current: () => boolean) => Promise<void> | void

const pages: Record<string, Page> = {
  overview,
  enterprises,
  endpoints,
  recordings,
  deliveries,
  import: importPage,
  operators,
  keys,
  audit,
  portal: portalSessions,
  erasures,
}

async function render(): Promise<void> {
  stopRefreshing()
  const id = ++renderId
  const current = () => id === renderId
  const setup = setupToken()
  if (setup !== null) {
    showAccount(null)
    return setupPage(main, setup, render)
  }
  const ssoError = /^#sso-error=(.*)$/.exec(location.hash)?.[1]
  if (ssoError !== undefined) {
    history.replaceState(null, '', location.pathname)
    return signedOut(`Single sign-on did not sign you in: ${decodeURIComponent(ssoError)}`)
  }
  if (session() === null && !(await identify(current))) return
  showAccount(session())
  const { name, params } = route()
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  const view = h('div', { class: 'page' })
  main.replaceChildren(view)
  const page = pages[name] ?? notFound
  const done = page(view, params, current)
  view.querySelector('h1')?.focus()
  await done
}

/** Asks the API who the tab's credentials are; signs out when no one. Whether the page may be drawn. */
async function identify(current: () => boolean): Promise<boolean> {
  if (!mayBeSignedIn()) {
    signedOut()
    return false
  }
  const withKey = token() !== null
  try {
    const answer = await whoIsSignedIn()
    if (!current()) return false
    if (answer === null) {
      signedOut(withKey ? 'The admin API no longer accepts the API key this tab signed in with.' : undefined)
      return false
    }
    setSession(answer)
    return true
  } catch (error) {
    if (current()) {
      signedOut(`The admin API could not be reached: ${(error as Error | undefined)?.message ?? error}`)
    }
    return false
  }
}

/** The bar: who is signed in, with its role and scope, and the pages its role may open. */
function showAccount(signedIn: Session | null): void {
  nav.hidden = signedIn === null
  account.hidden = signedIn === null
  if (signedIn === null) return
  signedInWithKey = token() !== null
  const { actor, role, enterprises: scope } = signedIn
  who.replaceChildren(
    h('span', { class: 'visually-hidden' }, 'Signed in as '),
    h('span', { class: 'who-name' }, actor.name),
    ' ',
    h('span', { class: `badge role-${role}`, id: 'who-role' }, role),
    scope === null ? '' : h('small', { class: 'who-scope' }, ` ${scopeText(scope)}`),
  )
  who.title = `${actor.kind}: ${actor.id}`
  signOutEverywhereButton.hidden = !inConsoleSession()
  for (const link of nav.querySelectorAll<HTMLElement>('[data-permission]')) {
    const item = link.closest('li') ?? link
    item.hidden = !may(link.dataset.permission ?? '')
  }
}

/** Forgets who was signed in and shows the sign-in page, with the reason given. */
function signedOut(message?: string): void {
  forgetCredentials()
  setSession(null)
  renderId++
  stopRefreshing()
  showAccount(null)
  signInPage(main, { message, withKey: signedInWithKey, signedIn: render })
}

/** Ends the console session (every one of the operator's, everywhere), or forgets the tab's API key. */
async function signOut(everywhere: boolean): Promise<void> {
  renderId++
  stopRefreshing()
  let message = 'Signed out.'
  if (inConsoleSession()) {
    try {
      const { ended } = await adminClient(null).call('signOut', { query: everywhere ? { everywhere } : {} })
      if (everywhere)
        message = `Signed out everywhere: ${ended} ${ended === 1 ? 'session' : 'sessions'} ended.`
    } catch (error) {
      message = `Signed out of this tab, but the admin API could not end the session: ${(error as Error).message}`
    }
  }
  signedOut(message)
}

function notFound(view: HTMLElement): void {
  view.append(heading('No such page'), h('p', {}, h('a', { href: '#/overview' }, 'Go to the overview')))
}

signOutButton.addEventListener('click', () => signOut(false))
signOutEverywhereButton.addEventListener('click', () => signOut(true))
// A refusal answered after signing out (a request of the page left) changes nothing.
whenUnauthorized((message) => session() !== null && signedOut(message))
document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault()
  main.focus()
})
window.addEventListener('hashchange', render)
render()
