/*
 * Earshot's operator console: one static page, this ES module and one stylesheet, served by the
 * platform's admin listener at /console (packages/platform/src/console/console-assets.ts).
 *
 * Why this stack: the console is a handful of forms and tables over the admin API, used by few people
 * on a loopback or VPN listener. Plain DOM calls cover that in one readable file; a framework would add
 * a build step, a dependency tree to keep current and a bundle to ship, for no feature the pages need.
 * Nothing is fetched from elsewhere (no CDN, no fonts), so the console works offline and its content
 * security policy can allow this origin only. Pages are built with DOM calls, never HTML strings, so
 * names and messages from the API are always text.
 *
 * The admin token lives in sessionStorage (gone with the tab) and goes out only as
 * `Authorization: Bearer` on API calls: never in a URL or a cookie. Pages are hash routes
 * (#/overview, #/deliveries?state=failed, …), so a filter can be linked without a server round trip.
 */

const TOKEN_KEY = 'earshot.adminToken'
const API = '/admin/v1'
const PAGE_SIZE = 25
/** While a listed delivery may still move on its own, the deliveries page refreshes this often. */
const LIVE_REFRESH_MS = 1000
const STATES = ['pending', 'held', 'in_flight', 'acked', 'confirmed', 'failed', 'unconfirmed', 'cancelled']
const REPLAYABLE = ['failed', 'unconfirmed']
/** Acked ones wait for the partner's receipt: the console shows them confirmed as it comes. */
const MOVING = ['pending', 'in_flight', 'acked']

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const signOutButton = document.getElementById('sign-out')

/** Bumped on every navigation: work started for a page that was left since then renders nothing. */
let renderId = 0
let refreshTimer

/** A refusal by the admin API, in its words: {code, msg}. */
class Refusal extends Error {
  constructor(status, body) {
    super(typeof body?.msg === 'string' ? body.msg : `the admin API answered HTTP ${status}`)
    this.status = status
    this.code = body?.code
  }
}

// ---------------------------------------------------------------------------------------------------
// DOM and formatting helpers

/** An element with attributes (`on…` ones are listeners) and children (strings become text). */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value)
    else if (name === 'class') element.className = value
    else element.setAttribute(name, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
}

const pad = (n, width = 2) => String(n).padStart(width, '0')

/** Local time as 2026-11-23 20:04:05, the full instant in the tooltip. */
function stamp(iso) {
  if (!iso) return '—'
  const d = new Date(iso)
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  return h('time', { datetime: iso, title: iso }, text)
}

/** An instant as a datetime-local input holds it (local time, to the second). */
function localInputValue(iso) {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

const stateLabel = (state) => state.replace('_', ' ')
const badge = (state) => h('span', { class: `badge state-${state}` }, stateLabel(state))
const count = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** An alert region, kept in the page (empty) so that screen readers announce what is put in it. */
function alertBox() {
  return h('p', { class: 'alert', role: 'alert' })
}

function statusBox() {
  return h('p', { class: 'status', role: 'status' })
}

/** Shows an error in an alert: a refusal as the API words it, with its code. */
function showError(box, error) {
  if (error instanceof Refusal) {
    box.replaceChildren(
      error.message,
      ' ',
      h('span', { class: 'code' }, `(${error.code ?? 'no code'}, HTTP ${error.status})`),
    )
  } else {
    box.replaceChildren(`The admin API could not be reached: ${error?.message ?? error}`)
  }
}

function label(forId, text) {
  return h('label', { for: forId }, text)
}

function field(id, text, control, hint) {
  return h(
    'div',
    { class: 'field' },
    label(id, text),
    control,
    hint && h('small', { id: `${id}-hint` }, hint),
  )
}

function heading(text) {
  return h('h1', { tabindex: '-1' }, text)
}

/** A table whose cells carry their column's name, which the phone layout shows beside each value. */
function table(caption, columns, rows) {
  return h(
    'table',
    {},
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h('tbody', {}, rows),
  )
}

function cell(column, ...content) {
  return h('td', { 'data-label': column }, ...content)
}

/** Asks before an action: resolves true when the operator confirms. */
function confirmDialog({ title, message, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    const cancel = h(
      'button',
      { type: 'button', class: 'quiet', onclick: () => dialog.close('cancel') },
      'Cancel',
    )
    const confirm =
      confirmLabel &&
      h(
        'button',
        { type: 'button', class: danger ? 'danger' : 'primary', onclick: () => dialog.close('confirm') },
        confirmLabel,
      )
    const dialog = h(
      'dialog',
      { 'aria-labelledby': 'dialog-title', 'aria-describedby': 'dialog-message' },
      h('h2', { id: 'dialog-title' }, title),
      h('p', { id: 'dialog-message' }, message),
      h('div', { class: 'actions' }, cancel, confirm),
    )
    dialog.addEventListener('close', () => {
      dialog.remove()
      resolve(dialog.returnValue === 'confirm')
    })
    document.body.append(dialog)
    dialog.showModal()
    cancel.focus()
  })
}

// ---------------------------------------------------------------------------------------------------
// The admin API

function token() {
  return sessionStorage.getItem(TOKEN_KEY)
}

/**
 * Calls the admin API; resolves with the JSON answer or rejects with a Refusal. A 401 in a session
 * means the token was changed on the platform: the console signs out and says so.
 */
async function api(method, path, body) {
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
    if (response.status === 401) signOut(`The admin API no longer accepts this token: ${refusal.message}`)
    throw refusal
  }
  return answer
}

async function enterpriseOptions() {
  const { enterprises } = await api('GET', '/enterprises')
  return enterprises
}

function enterpriseSelect(id, enterprises, selected, anyLabel) {
  return h(
    'select',
    { id, name: 'enterpriseId', required: !anyLabel },
    h('option', { value: '' }, anyLabel ?? 'Choose an enterprise'),
    enterprises.map((e) =>
      h(
        'option',
        { value: e.enterpriseId, selected: String(e.enterpriseId) === selected },
        `${e.enterpriseId} · ${e.name}${e.disabled ? ' (disabled)' : ''}`,
      ),
    ),
  )
}

// ---------------------------------------------------------------------------------------------------
// Navigation

function route() {
  const hash = location.hash.startsWith('#/') ? location.hash.slice(2) : 'overview'
  const [name, query = ''] = hash.split('?', 2)
  return { name, params: new URLSearchParams(query) }
}

const pages = { overview, enterprises, deliveries, import: importPage }

async function render() {
  clearTimeout(refreshTimer)
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

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY)
  renderId++
  clearTimeout(refreshTimer)
  nav.hidden = true
  signOutButton.hidden = true
  signIn(message)
}

function notFound(view) {
  view.append(heading('No such page'), h('p', {}, h('a', { href: '#/overview' }, 'Go to the overview')))
}

// ---------------------------------------------------------------------------------------------------
// Sign-in

function signIn(message) {
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
          const response = await fetch(`${API}/enterprises`, {
            headers: { authorization: `Bearer ${input.value}` },
          })
          if (response.ok) {
            sessionStorage.setItem(TOKEN_KEY, input.value)
            await render()
            return
          }
          const refusal = new Refusal(response.status, await response.json().catch(() => undefined))
          if (response.status === 401) {
            alert.replaceChildren(
              'That admin token was refused. ',
              'Use the EARSHOT_ADMIN_TOKEN the platform runs with (earshot serve prints a generated one once). ',
              h('span', { class: 'code' }, `The API said: ${refusal.message} (${refusal.code})`),
            )
          } else showError(alert, refusal)
        } catch (error) {
          showError(alert, error)
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

// ---------------------------------------------------------------------------------------------------
// Overview

async function overview(view, _params, current) {
  document.title = 'Overview · Earshot console'
  const alert = alertBox()
  const status = statusBox()
  const asOf = h('span', { class: 'muted' })
  const body = h('div', { class: 'overview' })
  const load = async () => {
    try {
      const data = await api('GET', '/overview')
      if (!current()) return
      body.replaceChildren(...overviewSections(data, load, status))
      asOf.replaceChildren('as of ', stamp(new Date().toISOString()))
      alert.replaceChildren()
    } catch (error) {
      if (current()) showError(alert, error)
    }
  }
  view.append(
    h(
      'div',
      { class: 'title-row' },
      heading('Overview'),
      asOf,
      h('button', { type: 'button', onclick: load }, 'Refresh'),
    ),
    alert,
    status,
    body,
  )
  await load()
}

function overviewSections(data, reload, status) {
  const { byState, confirmedInWindow } = data.deliveries
  const minutes = Math.round(data.windowSeconds / 60)
  const stat = (value, text, href) =>
    h(
      href ? 'a' : 'div',
      { class: 'stat', href },
      h('span', { class: 'stat-value' }, value),
      h('span', { class: 'stat-label' }, text),
    )
  const rate = data.push.successRate === null ? '—' : `${(data.push.successRate * 100).toFixed(1)}%`
  const ms = (value) => (value === null ? '—' : `${value} ms`)
  const stateStats = ['pending', 'in_flight', 'acked', 'failed', 'unconfirmed'].map((state) =>
    stat(byState[state], stateLabel(state), `#/deliveries?state=${state}`),
  )
  return [
    h(
      'section',
      { 'aria-labelledby': 'deliveries-heading' },
      h('h2', { id: 'deliveries-heading' }, 'Deliveries by state'),
      h(
        'div',
        { class: 'stats' },
        stateStats,
        stat(confirmedInWindow, `confirmed, last ${minutes} min`, '#/deliveries?state=confirmed'),
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'push-heading' },
      h('h2', { id: 'push-heading' }, `Push, last ${minutes} minutes`),
      h(
        'div',
        { class: 'stats' },
        stat(rate, `success rate (${data.push.acked} of ${count(data.push.attempts, 'attempt')} acked)`),
        stat(ms(data.push.latencyMs.p50), 'latency p50'),
        stat(ms(data.push.latencyMs.p99), 'latency p99'),
        stat(data.queueDepth, 'queue depth (due now)'),
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'endpoints-heading' },
      h('h2', { id: 'endpoints-heading' }, 'Push URLs'),
      data.endpoints.length === 0
        ? h(
            'p',
            {},
            'No push URL yet: set one on the ',
            h('a', { href: '#/enterprises' }, 'Enterprises'),
            ' page.',
          )
        : endpointTable(data.endpoints, reload, status),
    ),
  ]
}

function endpointTable(endpoints, reload, status) {
  const columns = ['Push URL', 'State', 'Last success', 'Consecutive failures', 'Enterprises', 'Why', '']
  return table(
    'Push URLs and their health',
    columns,
    endpoints.map((endpoint) => {
      const alert = alertBox()
      const enable = async () => {
        try {
          const enabled = await api('POST', '/endpoints/enable', { url: endpoint.url })
          status.textContent =
            `Enabled ${enabled.url}: ${count(enabled.resumed, 'held delivery', 'held deliveries')} resumed, ` +
            `${count(enabled.replayed, 'delivery', 'deliveries')} that failed meanwhile pushed again.`
          await reload()
        } catch (error) {
          showError(alert, error)
        }
      }
      return h(
        'tr',
        {},
        cell(columns[0], h('span', { class: 'url' }, endpoint.url)),
        cell(columns[1], badge(endpoint.state)),
        cell(columns[2], stamp(endpoint.lastSuccessAt)),
        cell(columns[3], String(endpoint.consecutiveFailures)),
        cell(columns[4], endpoint.enterprises.join(', ') || '—'),
        cell(columns[5], endpoint.reason ?? '—'),
        cell(
          'Actions',
          endpoint.state === 'disabled' &&
            h(
              'button',
              { type: 'button', onclick: enable, 'aria-label': `Enable ${endpoint.url}` },
              'Enable',
            ),
          alert,
        ),
      )
    }),
  )
}

// ---------------------------------------------------------------------------------------------------
// Enterprises

async function enterprises(view, _params, current) {
  document.title = 'Enterprises · Earshot console'
  const alert = alertBox()
  const status = statusBox()
  const secretPanel = h('div', { class: 'secret-panel', hidden: true })
  const listing = h('div')

  const load = async () => {
    try {
      const list = await enterpriseOptions()
      if (!current()) return
      listing.replaceChildren(enterpriseTable(list))
    } catch (error) {
      if (current()) showError(alert, error)
    }
  }

  const showSecret = (heading, credentials) => {
    const output = h('input', {
      id: 'secret',
      type: 'text',
      readonly: true,
      value: credentials.secret,
      spellcheck: 'false',
      'aria-describedby': 'secret-note',
    })
    const copied = statusBox()
    secretPanel.replaceChildren(
      h('h2', {}, heading),
      h(
        'p',
        { id: 'secret-note' },
        `Key version ${credentials.keyVersion}. This secret is shown only this once: copy it now and hand it to the partner.`,
      ),
      field('secret', 'Secret', output),
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            class: 'primary',
            onclick: async () => {
              try {
                await navigator.clipboard.writeText(credentials.secret)
                copied.textContent = 'Copied to the clipboard.'
              } catch {
                output.select()
                copied.textContent =
                  'The browser refused the clipboard: the secret is selected, copy it by hand.'
              }
            },
          },
          'Copy secret',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'quiet',
            onclick: () => {
              secretPanel.hidden = true
              secretPanel.replaceChildren()
            },
          },
          'Hide it',
        ),
      ),
      copied,
    )
    secretPanel.hidden = false
    output.focus()
    output.select()
  }

  const act = async (work) => {
    alert.replaceChildren()
    status.replaceChildren()
    try {
      await work()
      await load()
    } catch (error) {
      showError(alert, error)
    }
  }

  function enterpriseTable(list) {
    if (list.length === 0) return h('p', {}, 'No enterprise yet.')
    const columns = ['ID', 'Name', 'Push URL', 'Keys', 'State', 'Created', 'Actions']
    return table(
      'Enterprises',
      columns,
      list.map((e) => {
        const current = e.keys.at(-1)
        const retiring = e.keys.filter((k) => k.retiresAt && new Date(k.retiresAt) > new Date())
        return h(
          'tr',
          {},
          cell(columns[0], String(e.enterpriseId)),
          cell(columns[1], e.name),
          cell(
            columns[2],
            e.pushUrl ? h('span', { class: 'url' }, e.pushUrl) : h('span', { class: 'muted' }, 'none'),
          ),
          cell(
            columns[3],
            `v${current?.keyVersion ?? '?'}`,
            retiring.map((k) =>
              h('small', { class: 'block' }, `v${k.keyVersion} until `, stamp(k.retiresAt)),
            ),
          ),
          cell(columns[4], e.disabled ? badge('disabled') : badge('active')),
          cell(columns[5], stamp(e.createdAt)),
          cell(columns[6], e.disabled ? h('span', { class: 'muted' }, '—') : enterpriseActions(e)),
        )
      }),
    )
  }

  function enterpriseActions(e) {
    const inputId = `push-url-${e.enterpriseId}`
    const input = h('input', {
      id: inputId,
      type: 'text',
      inputmode: 'url',
      value: e.pushUrl ?? '',
      placeholder: 'https://partner.example/earshot',
      spellcheck: 'false',
    })
    const formAlert = alertBox()
    const setUrl = (pushUrl) => async () => {
      formAlert.replaceChildren()
      try {
        await api('PUT', `/enterprises/${e.enterpriseId}/push-url`, { pushUrl })
        status.textContent =
          pushUrl === null
            ? `Enterprise ${e.enterpriseId} no longer pushes.`
            : `Enterprise ${e.enterpriseId} now pushes to ${pushUrl}.`
        await load()
      } catch (error) {
        showError(formAlert, error)
        input.focus()
      }
    }
    return h(
      'div',
      { class: 'row-actions' },
      h(
        'details',
        {},
        h('summary', {}, 'Push URL'),
        h(
          'form',
          {
            class: 'inline-form',
            onsubmit: (event) => {
              event.preventDefault()
              setUrl(input.value.trim())()
            },
          },
          label(inputId, `Push URL of enterprise ${e.enterpriseId}`),
          input,
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'submit', class: 'primary' }, 'Save'),
            e.pushUrl && h('button', { type: 'button', onclick: setUrl(null) }, 'Clear'),
          ),
          formAlert,
        ),
      ),
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Rotate the key of enterprise ${e.enterpriseId}`,
          onclick: () =>
            act(async () => {
              const rotated = await api('POST', `/enterprises/${e.enterpriseId}/rotate-key`)
              showSecret(`Enterprise ${e.enterpriseId}: new key`, rotated)
              status.textContent = `Key version ${rotated.previousKeyVersion} stays valid until ${stamp(rotated.previousKeyRetiresAt).textContent}.`
            }),
        },
        'Rotate key',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          'aria-label': `Disable enterprise ${e.enterpriseId}`,
          onclick: async () => {
            const confirmed = await confirmDialog({
              title: `Disable enterprise ${e.enterpriseId}?`,
              message: `${e.name} can no longer get tokens or query: its tokens stop working on every instance within a second. The console cannot enable it again.`,
              confirmLabel: 'Disable',
              danger: true,
            })
            if (confirmed) {
              await act(async () => {
                await api('POST', `/enterprises/${e.enterpriseId}/disable`)
                status.textContent = `Enterprise ${e.enterpriseId} is disabled.`
              })
            }
          },
        },
        'Disable',
      ),
    )
  }

  const name = h('input', { id: 'new-name', name: 'name', type: 'text', required: true, maxlength: '200' })
  const pushUrl = h('input', {
    id: 'new-push-url',
    name: 'pushUrl',
    type: 'text',
    inputmode: 'url',
    placeholder: 'https://partner.example/earshot',
    spellcheck: 'false',
  })
  const createAlert = alertBox()
  const create = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'create-heading',
      onsubmit: async (event) => {
        event.preventDefault()
        createAlert.replaceChildren()
        try {
          const body = { name: name.value, ...(pushUrl.value.trim() && { pushUrl: pushUrl.value.trim() }) }
          const created = await api('POST', '/enterprises', body)
          name.value = ''
          pushUrl.value = ''
          showSecret(`Enterprise ${created.enterpriseId} created`, created)
          await load()
        } catch (error) {
          showError(createAlert, error)
        }
      },
    },
    h('h2', { id: 'create-heading' }, 'Create an enterprise'),
    h(
      'div',
      { class: 'fields' },
      field('new-name', 'Name', name),
      field('new-push-url', 'Push URL (optional)', pushUrl),
    ),
    createAlert,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create')),
  )

  view.append(heading('Enterprises'), create, secretPanel, status, alert, listing)
  await load()
}

// ---------------------------------------------------------------------------------------------------
// Deliveries

async function deliveries(view, params, current) {
  document.title = 'Deliveries · Earshot console'
  const alert = alertBox()
  const status = statusBox()
  const listing = h('div', { class: 'listing' })
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of deliveries' })
  /** Cursors of the pages seen before this one, for "Newer". */
  const cursors = []
  let before = null
  let shown = ''
  const open = new Set()

  const filter = new URLSearchParams()
  for (const name of ['enterpriseId', 'state', 'audioId', 'from', 'to']) {
    const value = params.get(name)
    if (value) filter.set(name, value)
  }

  const load = async () => {
    clearTimeout(refreshTimer)
    try {
      const query = new URLSearchParams(filter)
      query.set('limit', String(PAGE_SIZE))
      if (before !== null) query.set('before', String(before))
      const page = await api('GET', `/delivery-log?${query}`)
      if (!current()) return
      // Live refreshes redraw only what changed, so focus and open timelines stay put.
      const fingerprint = JSON.stringify(page)
      if (fingerprint !== shown) {
        shown = fingerprint
        const focused = document.activeElement?.id
        listing.replaceChildren(deliveryTable(page.deliveries))
        renderPager(page.nextBefore)
        if (focused) document.getElementById(focused)?.focus()
      }
      if (page.deliveries.some((d) => MOVING.includes(d.state)))
        refreshTimer = setTimeout(load, LIVE_REFRESH_MS)
    } catch (error) {
      if (current()) showError(alert, error)
    }
  }

  const renderPager = (nextBefore) => {
    pager.replaceChildren(
      h(
        'button',
        {
          type: 'button',
          id: 'page-newer',
          disabled: cursors.length === 0,
          onclick: () => {
            before = cursors.pop() ?? null
            load()
          },
        },
        '← Newer',
      ),
      h('span', { class: 'muted' }, `Page ${cursors.length + 1}`),
      h(
        'button',
        {
          type: 'button',
          id: 'page-older',
          disabled: nextBefore === null,
          onclick: () => {
            cursors.push(before)
            before = nextBefore
            load()
          },
        },
        'Older →',
      ),
    )
  }

  const replayOne = async (delivery) => {
    alert.replaceChildren()
    try {
      await api('POST', `/deliveries/${delivery.deliveryId}/replay`)
      status.textContent = `Delivery ${delivery.deliveryId} is pending again (same eventId ${delivery.eventId}).`
      await load()
    } catch (error) {
      showError(alert, error)
    }
  }

  const replayRange = async () => {
    alert.replaceChildren()
    status.replaceChildren()
    const enterpriseId = filter.get('enterpriseId')
    const from = filter.get('from')
    const to = filter.get('to')
    if (!enterpriseId || !from || !to) {
      alert.textContent =
        'To replay a range, filter by an enterprise and both ends of the time range (from and to), apply the filter, then replay.'
      return
    }
    try {
      const range = new URLSearchParams({ from, to })
      const { replayable } = await api('GET', `/enterprises/${enterpriseId}/deliveries/replayable?${range}`)
      const span = `created from ${stamp(from).textContent} to ${stamp(to).textContent}`
      if (replayable === 0) {
        await confirmDialog({
          title: 'Nothing to replay',
          message: `Enterprise ${enterpriseId} has no failed or unconfirmed delivery ${span}.`,
        })
        return
      }
      const confirmed = await confirmDialog({
        title: `Replay ${count(replayable, 'delivery', 'deliveries')}?`,
        message: `${count(replayable, 'failed or unconfirmed delivery', 'failed or unconfirmed deliveries')} of enterprise ${enterpriseId} ${span} will be replayed: pushed again with the same eventIds.`,
        confirmLabel: `Replay ${count(replayable, 'delivery', 'deliveries')}`,
      })
      if (!confirmed) return
      const { replayed } = await api('POST', `/enterprises/${enterpriseId}/deliveries/replay`, { from, to })
      status.textContent = `Replayed ${count(replayed, 'delivery', 'deliveries')}.`
      await load()
    } catch (error) {
      showError(alert, error)
    }
  }

  function deliveryTable(list) {
    if (list.length === 0) return h('p', {}, 'No delivery matches.')
    const columns = [
      'Delivery',
      'Enterprise',
      'Audio ID',
      'Event',
      'State',
      'Attempts',
      'Created',
      'Next attempt',
      '',
    ]
    const rows = []
    for (const d of list) {
      const timelineId = `timeline-${d.deliveryId}`
      const toggle = h(
        'button',
        {
          type: 'button',
          id: `toggle-${d.deliveryId}`,
          'aria-expanded': String(open.has(d.deliveryId)),
          'aria-controls': timelineId,
          onclick: () => {
            if (open.has(d.deliveryId)) open.delete(d.deliveryId)
            else open.add(d.deliveryId)
            const expanded = open.has(d.deliveryId)
            toggle.setAttribute('aria-expanded', String(expanded))
            detail.hidden = !expanded
          },
        },
        'Timeline',
      )
      rows.push(
        h(
          'tr',
          { id: `delivery-${d.deliveryId}` },
          cell(columns[0], String(d.deliveryId)),
          cell(columns[1], String(d.enterpriseId)),
          cell(columns[2], h('span', { class: 'mono' }, d.audioId)),
          cell(columns[3], d.eventType.replace('recording.', '')),
          cell(columns[4], badge(d.state)),
          cell(columns[5], String(d.attempts.length)),
          cell(columns[6], stamp(d.createdAt)),
          cell(columns[7], stamp(d.nextAttemptAt)),
          cell(
            'Actions',
            h(
              'div',
              { class: 'row-actions' },
              toggle,
              REPLAYABLE.includes(d.state) &&
                h(
                  'button',
                  {
                    type: 'button',
                    id: `replay-${d.deliveryId}`,
                    'aria-label': `Replay delivery ${d.deliveryId}`,
                    onclick: () => replayOne(d),
                  },
                  'Replay',
                ),
            ),
          ),
        ),
      )
      const detail = h(
        'tr',
        { class: 'timeline-row', hidden: !open.has(d.deliveryId) },
        h('td', { colspan: String(columns.length), id: timelineId }, timeline(d)),
      )
      rows.push(detail)
    }
    return table('Deliveries, newest first', columns, rows)
  }

  view.append(
    h(
      'div',
      { class: 'title-row' },
      heading('Deliveries'),
      h('button', { type: 'button', onclick: () => load() }, 'Refresh'),
    ),
  )
  view.append(
    await filterForm(filter, current),
    h(
      'div',
      { class: 'toolbar' },
      h('button', { type: 'button', onclick: replayRange }, 'Replay range…'),
      h(
        'small',
        { class: 'muted' },
        'Replays the failed and unconfirmed deliveries of the filtered enterprise created in the filtered time range.',
      ),
    ),
    status,
    alert,
    listing,
    pager,
  )
  await load()
}

async function filterForm(filter, current) {
  let list = []
  const alert = alertBox()
  try {
    list = await enterpriseOptions()
  } catch (error) {
    if (current()) showError(alert, error)
  }
  const state = h(
    'select',
    { id: 'filter-state', name: 'state' },
    h('option', { value: '' }, 'Any state'),
    STATES.map((s) => h('option', { value: s, selected: filter.get('state') === s }, stateLabel(s))),
  )
  const enterprise = enterpriseSelect(
    'filter-enterprise',
    list,
    filter.get('enterpriseId'),
    'Every enterprise',
  )
  const audioId = h('input', {
    id: 'filter-audio-id',
    name: 'audioId',
    type: 'text',
    value: filter.get('audioId') ?? '',
    spellcheck: 'false',
  })
  const from = h('input', {
    id: 'filter-from',
    name: 'from',
    type: 'datetime-local',
    step: '1',
    value: localInputValue(filter.get('from')),
  })
  const to = h('input', {
    id: 'filter-to',
    name: 'to',
    type: 'datetime-local',
    step: '1',
    value: localInputValue(filter.get('to')),
  })
  return h(
    'form',
    {
      class: 'card filters',
      'aria-label': 'Filter deliveries',
      onsubmit: (event) => {
        event.preventDefault()
        const query = new URLSearchParams()
        if (enterprise.value) query.set('enterpriseId', enterprise.value)
        if (state.value) query.set('state', state.value)
        if (audioId.value.trim()) query.set('audioId', audioId.value.trim())
        // datetime-local is the browser's local time; the API takes instants with an offset.
        if (from.value) query.set('from', new Date(from.value).toISOString())
        if (to.value) query.set('to', new Date(to.value).toISOString())
        const next = `#/deliveries${query.size > 0 ? `?${query}` : ''}`
        if (location.hash === next) render()
        else location.hash = next
      },
    },
    h(
      'div',
      { class: 'fields' },
      field('filter-enterprise', 'Enterprise', enterprise),
      field('filter-state', 'State', state),
      field('filter-audio-id', 'Audio ID', audioId),
      field('filter-from', 'Created from', from),
      field('filter-to', 'Created before', to),
    ),
    alert,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Apply'),
      h('a', { href: '#/deliveries', class: 'button quiet' }, 'Clear'),
    ),
  )
}

function timeline(delivery) {
  const facts = [
    ['Event ID', h('span', { class: 'mono' }, delivery.eventId)],
    ['Event type', delivery.eventType],
    ['Created', stamp(delivery.createdAt)],
    ['Acked', stamp(delivery.ackedAt)],
    ['Confirmed', stamp(delivery.confirmedAt)],
    ['Next attempt', stamp(delivery.nextAttemptAt)],
  ]
  return h(
    'div',
    { class: 'timeline' },
    h('h3', {}, `Delivery ${delivery.deliveryId}: attempts`),
    h(
      'dl',
      { class: 'facts' },
      facts.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
    ),
    delivery.attempts.length === 0
      ? h('p', { class: 'muted' }, 'No attempt yet.')
      : h(
          'ol',
          { class: 'attempts' },
          delivery.attempts.map((a) =>
            h(
              'li',
              { class: `attempt outcome-${a.outcome}` },
              h('span', { class: 'attempt-no' }, `#${a.attemptNo}`),
              stamp(a.startedAt),
              h('span', {}, `${a.durationMs} ms`),
              h('span', {}, a.httpStatus === null ? 'no HTTP answer' : `HTTP ${a.httpStatus}`),
              h('span', {}, a.responseCode === null ? 'no code' : `code ${a.responseCode}`),
              badge(a.outcome),
              // The sender words a bare refusal as the status already shown.
              a.error && a.error !== `HTTP ${a.httpStatus}` && h('span', { class: 'attempt-error' }, a.error),
              h('span', { class: 'muted' }, 'next attempt ', stamp(a.nextAttemptAt)),
            ),
          ),
        ),
  )
}

// ---------------------------------------------------------------------------------------------------
// Import

async function importPage(view, params, current) {
  document.title = 'Import · Earshot console'
  const alert = alertBox()
  view.append(
    heading('Import recordings'),
    h(
      'p',
      {},
      'A JSON Lines file: one recording per line. Every line is checked before anything is stored; a refused file imports nothing and lists its bad lines. Importing the same file again completes an interrupted import and skips what is stored already.',
    ),
  )
  let list = []
  try {
    list = await enterpriseOptions()
  } catch (error) {
    if (current()) showError(alert, error)
  }
  const enterprise = enterpriseSelect(
    'import-enterprise',
    list.filter((e) => !e.disabled),
    params.get('enterpriseId'),
  )
  const file = h('input', {
    id: 'import-file',
    name: 'file',
    type: 'file',
    required: true,
    accept: '.jsonl,.ndjson,.json,application/x-ndjson,application/jsonl',
  })
  const progress = h('progress', {
    id: 'import-progress',
    max: '1',
    'aria-labelledby': 'import-progress-label',
  })
  const progressText = h('span', { id: 'import-progress-label' }, 'Import progress')
  const progressBlock = h('div', { class: 'progress', hidden: true }, progressText, progress)
  const status = statusBox()
  const problems = h('ol', { class: 'problems', 'aria-label': 'Refused lines' })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Import')

  const refuse = (failure) => {
    const [summary, ...lines] = failure.msg.split(/; (?=line \d+: )/)
    alert.replaceChildren(
      summary.replace(/^./, (c) => c.toUpperCase()),
      ' ',
      h('span', { class: 'code' }, `(${failure.code})`),
    )
    problems.replaceChildren(...lines.map((line) => h('li', {}, line)))
  }

  const run = async (event) => {
    event.preventDefault()
    const chosen = file.files?.[0]
    if (!chosen || !enterprise.value) return
    alert.replaceChildren()
    status.replaceChildren()
    problems.replaceChildren()
    submit.disabled = true
    progressBlock.hidden = false
    progress.removeAttribute('value')
    progressText.textContent = `Uploading and checking ${chosen.name}…`
    try {
      const response = await fetch(`${API}/enterprises/${enterprise.value}/recordings/import`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/x-ndjson' },
        body: chosen,
      })
      if (!response.ok) {
        const answer = await response.json().catch(() => undefined)
        if (response.status === 401) signOut('The admin API no longer accepts this token.')
        progressBlock.hidden = true
        refuse({
          code: answer?.code ?? `HTTP ${response.status}`,
          msg: answer?.msg ?? 'the import was refused',
        })
        return
      }
      let finished = false
      for await (const line of ndjsonLines(response.body)) {
        if ('progress' in line) {
          progress.max = Math.max(line.total, 1)
          progress.value = line.progress
          progressText.textContent = `Committed ${line.progress} of ${count(line.total, 'recording')}`
        } else if ('error' in line) {
          refuse(line.error)
          finished = true
        } else if ('imported' in line) {
          status.textContent = `Imported ${count(line.imported, 'recording')} into enterprise ${enterprise.value}; skipped ${line.skipped} already imported.`
          finished = true
        }
      }
      if (!finished) {
        alert.textContent = 'The import stopped before its end: import the same file again to complete it.'
      }
    } catch (error) {
      showError(alert, error)
    } finally {
      submit.disabled = false
    }
  }

  view.append(
    h(
      'form',
      { class: 'card', 'aria-label': 'Import a JSON Lines file', onsubmit: run },
      h(
        'div',
        { class: 'fields' },
        field('import-enterprise', 'Enterprise', enterprise),
        field('import-file', 'JSON Lines file', file),
      ),
      h('div', { class: 'actions' }, submit),
    ),
    progressBlock,
    status,
    alert,
    problems,
  )
}

/** The JSON lines of a streamed answer, as they arrive. */
async function* ndjsonLines(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += value
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
      const line = buffer.slice(0, end)
      buffer = buffer.slice(end + 1)
      if (line.trim()) yield JSON.parse(line)
    }
  }
  if (buffer.trim()) yield JSON.parse(buffer)
}

// ---------------------------------------------------------------------------------------------------

signOutButton.addEventListener('click', () => signOut('Signed out.'))
document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault()
  main.focus()
})
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#/') || location.hash === '') render()
})
render()
