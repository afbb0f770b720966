/*
 * Earshot's operator console: one static page, these modules and one stylesheet, served by the platform's
 * admin listener at /console (packages/platform/src/console/console-assets.ts). This module is the shell:
 * sign-in, the navigation bar and the hash routes; each page is a module of its own (overview.ts,
 * enterprises.ts, endpoints.ts, recordings.ts, deliveries.ts, import.ts) built from dom.ts and admin-api.ts.
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
 * The admin token lives in sessionStorage (gone with the tab) and goes out only as
 * `Authorization: Bearer` on API calls: never in a URL or a cookie. Pages are hash routes
 * (#/overview, #/deliveries?state=failed, …), so a filter can be linked without a server round trip.
 */
import { adminClient, forgetToken, Refusal, storeToken, token, whenUnauthorized } from './admin-api.js'
import { deliveries } from './deliveries.js'
import { alertBox, field, h, heading, showError } from './dom.js'
import { endpoints } from './endpoints.js'
import { enterprises } from './enterprises.js'
import { importPage } from './import.js'
import { stopRefreshing } from './navigation.js'
import { overview } from './overview.js'
import { recordings } from './recordings.js'

/** An element of index.html. */
function byId(id: string): HTMLElement {
  const element = document.getElementById(id)
  if (!element) throw new Error(`index.html has no #${id}`)
  return element
}

const main = byId('main')
const nav = byId('nav')
const signOutButton = byId('sign-out')

/** Bumped on every navigation: work started for a page that was left since then renders nothing. */
let renderId = 0

function route() {
  const hash = location.hash.startsWith('#/') ? location.hash.slice(2) : 'overview'
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
}

async function render(): Promise<void> {
  stopRefreshing()
  const id = ++renderId
  const current = () => id === renderId
  const signedIn = token() !== null
  nav.hidden = !signedIn
  signOutButton.hidden = !signedIn
  if (!signedIn) return signIn()
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

function signOut(message: string): void {
  forgetToken()
  renderId++
  stopRefreshing()
  nav.hidden = true
  signOutButton.hidden = true
  signIn(message)
}

function notFound(view: HTMLElement): void {
  view.append(heading('No such page'), h('p', {}, h('a', { href: '#/overview' }, 'Go to the overview')))
}

function signIn(message?: string): void {
  document.title = 'Sign in · Earshot console'
  const alert = alertBox()
  if (message) alert.textContent = message
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'token-hint',
  })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in')
  const form = h(
    'form',
    {
      class: 'card narrow',
      onsubmit: async (event) => {
        event.preventDefault()
        submit.disabled = true
        alert.replaceChildren()
        try {
          // Checked with one read before it is kept: a wrong token is never stored.
          await adminClient(input.value).call('listEnterprises')
          storeToken(input.value)
          await render()
        } catch (error) {
          if (error instanceof Refusal && error.status === 401) {
            alert.replaceChildren(
              'That admin token was refused. ',
              'Use the EARSHOT_ADMIN_TOKEN the platform runs with (earshot serve prints a generated one once). ',
              h('span', { class: 'code' }, `The API said: ${error.msg} (${error.code})`),
            )
          } else showError(alert, error)
        } finally {
          submit.disabled = false
        }
      },
    },
    h('h1', { tabindex: '-1' }, 'Sign in'),
    h('p', {}, 'The operator console runs the admin API with its bearer token.'),
    field(
      'token',
      'Admin token',
      input,
      'Kept in this tab only (sessionStorage) and sent as a bearer header; never in a URL or a cookie.',
    ),
    alert,
    h('div', { class: 'actions' }, submit),
  )
  main.replaceChildren(h('div', { class: 'page sign-in' }, form))
  input.focus()
}

signOutButton.addEventListener('click', () => signOut('Signed out.'))
whenUnauthorized(signOut)
document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault()
  main.focus()
})
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#/') || location.hash === '') render()
})
render()
