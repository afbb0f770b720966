/**
 * The audit page (audit.read): the trail of changes, sign-ins and refusals, newest first, filtered by actor,
 * enterprise and time, a page at a time; and the check of its hash chain.
 */
import { api, enterpriseOptions } from './admin-api.js'
import type { AdminAnswer, AdminRequest, Enterprise } from './admin-client.js'
import { auditTable } from './audit-rows.js'
import {
  alertBox,
  enterpriseSelect,
  field,
  h,
  heading,
  showError,
  statusBox,
  utcInputInstant,
  utcInputValue,
} from './dom.js'
import { navigate } from './navigation.js'
import { may, notGranted } from './session.js'

/** Rows a page shows, unless its address says (`limit`, 1 to 999: one more row is asked for). */
const PAGE_SIZE = 50
const FILTERS = ['actor', 'enterprise', 'since'] as const

type AuditQuery = NonNullable<AdminRequest<'listAudit'>['query']>

interface AuditPage {
  filter: URLSearchParams
  current: () => boolean
  alert: HTMLElement
  status: HTMLElement
  listing: HTMLElement
  pager: HTMLElement
  /** The `before` of each page seen before this one, for "Newer". */
  cursors: (number | null)[]
  size: number
  before: number | null
  load(): Promise<void>
}

export async function audit(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  document.title = 'Audit · Earshot console'
  const title = h('div', { class: 'title-row' }, heading('Audit trail'))
  view.append(title)
  if (!may('audit.read')) {
    view.append(notGranted('audit.read', 'Reading the audit trail'))
    return
  }
  const filter = new URLSearchParams()
  for (const name of FILTERS) {
    const value = params.get(name)?.trim()
    if (value) filter.set(name, value)
  }
  const page: AuditPage = {
    filter,
    current,
    alert: alertBox(),
    status: statusBox(),
    listing: h('div', { class: 'listing' }),
    pager: h('nav', { class: 'pager', 'aria-label': 'Pages of the audit trail' }),
    cursors: [],
    size: pageSize(params.get('limit')),
    before: null,
    load: () => loadAudit(page),
  }
  title.append(h('button', { type: 'button', onclick: () => verifyChain(page) }, 'Verify chain'))
  view.append(await filterForm(page), page.status, page.alert, page.listing, page.pager)
  await page.load()
}

async function loadAudit(page: AuditPage): Promise<void> {
  try {
    const query: AuditQuery = { ...Object.fromEntries(page.filter), limit: String(page.size + 1) }
    if (page.before !== null) query.before = String(page.before)
    const { rows } = await api('listAudit', { query })
    if (!page.current()) return
    const shown = rows.slice(0, page.size)
    page.listing.replaceChildren(shown.length === 0 ? h('p', {}, 'No row matches.') : auditTable(shown))
    const last = shown.at(-1)
    renderPager(page, rows.length > page.size && last ? last.seq : null)
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

function pageSize(limit: string | null): number {
  const size = Number(limit)
  return Number.isInteger(size) && size >= 1 && size <= 999 ? size : PAGE_SIZE
}

function renderPager(page: AuditPage, nextBefore: number | null): void {
  const turn = (work: () => void) => () => {
    work()
    page.alert.replaceChildren()
    page.load()
  }
  page.pager.replaceChildren(
    h(
      'button',
      {
        type: 'button',
        id: 'audit-newer',
        disabled: page.cursors.length === 0,
        onclick: turn(() => {
          page.before = page.cursors.pop() ?? null
        }),
      },
      '← Newer',
    ),
    h('span', { class: 'muted' }, `Page ${page.cursors.length + 1}`),
    h(
      'button',
      {
        type: 'button',
        id: 'audit-older',
        disabled: nextBefore === null,
        onclick: turn(() => {
          page.cursors.push(page.before)
          page.before = nextBefore
        }),
      },
      'Older →',
    ),
  )
}

/** Checks the hash chain from its anchor: ok, how many rows were checked, and where it breaks if it does. */
async function verifyChain(page: AuditPage): Promise<void> {
  page.alert.replaceChildren()
  page.status.textContent = 'Verifying the chain…'
  try {
    const result: AdminAnswer<'verifyAudit'> = await api('verifyAudit')
    if (!page.current()) return
    if (result.ok) {
      page.status.textContent = `The chain is intact: ${result.checked} rows checked.`
    } else {
      page.status.replaceChildren()
      page.alert.textContent = `The chain is broken at row ${result.firstBad ?? '?'} (${result.checked} rows checked): a row was changed or removed there.`
    }
  } catch (error) {
    page.status.replaceChildren()
    if (page.current()) showError(page.alert, error)
  }
}

async function filterForm(page: AuditPage): Promise<HTMLFormElement> {
  let list: Enterprise[] = []
  const alert = alertBox()
  try {
    list = await enterpriseOptions()
  } catch (error) {
    if (page.current()) showError(alert, error)
  }
  const actor = h('input', {
    id: 'audit-actor',
    type: 'text',
    value: page.filter.get('actor') ?? '',
    spellcheck: 'false',
    placeholder: 'operator:3',
    'aria-describedby': 'audit-actor-hint',
  })
  const enterprise = enterpriseSelect(
    'audit-enterprise',
    list,
    page.filter.get('enterprise'),
    'Any enterprise',
  )
  const since = h('input', {
    id: 'audit-since',
    type: 'datetime-local',
    step: '1',
    value: utcInputValue(page.filter.get('since')),
  })
  return h(
    'form',
    {
      class: 'card filters',
      'aria-label': 'Filter the audit trail',
      onsubmit: (event) => {
        event.preventDefault()
        const query = new URLSearchParams()
        if (actor.value.trim()) query.set('actor', actor.value.trim())
        if (enterprise.value) query.set('enterprise', enterprise.value)
        if (since.value) query.set('since', utcInputInstant(since.value))
        navigate(`#/audit${query.size > 0 ? `?${query}` : ''}`)
      },
    },
    h(
      'div',
      { class: 'fields' },
      field('audit-actor', 'Actor', actor, "An actor's id: operator:3, key:7, break-glass."),
      field('audit-enterprise', 'Enterprise', enterprise),
      field('audit-since', 'Since (UTC)', since),
    ),
    alert,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Apply'),
      h('a', { href: '#/audit', class: 'button quiet' }, 'Clear'),
    ),
  )
}
