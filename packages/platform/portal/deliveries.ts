/**
 * The deliveries section: the enterprise's deliveries, newest first, filtered by state, event type, audioId
 * and creation time (the filter in the hash route, so it can be linked), a page at a time by cursor; each
 * expands to its attempts with what the receiver answered; one replayed, or every failed or unconfirmed
 * one since a time (a manage session's).
 */
import { attemptList } from './delivery-attempts.js'
import {
  alertBox,
  badge,
  cell,
  field,
  h,
  heading,
  showError,
  stamp,
  statusBox,
  table,
  utcInputInstant,
  utcInputValue,
} from './dom.js'
import { navigate, refreshLater, stopRefreshing } from './navigation.js'
import { DELIVERY_STATES, type DeliveryFilter, EVENT_TYPES, type PartnerDelivery } from './page-constants.js'
import { call } from './portal-api.js'
import { mayChange, readOnlyNote } from './portal-session.js'
import { replaySinceForm } from './replay-since.js'

/** While a delivery shown may still move on its own, the page is read again this often. */
const LIVE_REFRESH_MS = 2000
/** The states a delivery leaves by itself (an acked one when its receipt comes). */
const MOVING: readonly string[] = ['pending', 'in_flight', 'acked', 'queued']
/** The states one delivery may be replayed from. */
const REPLAYABLE: readonly string[] = ['failed', 'unconfirmed', 'queued']
const FILTERS = ['state', 'eventType', 'audioId', 'since', 'until'] as const

interface DeliveriesView {
  current: () => boolean
  params: URLSearchParams
  alert: HTMLElement
  status: HTMLElement
  listing: HTMLElement
  /** The deliveries expanded to their attempts. */
  open: Set<number>
  shown: string
}

export async function deliveries(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  const page: DeliveriesView = {
    current,
    params,
    alert: alertBox(),
    status: statusBox(),
    listing: h('div', { class: 'listing' }),
    open: new Set(),
    shown: '',
  }
  const replayed = async (message: string) => {
    page.status.textContent = message
    await load(page)
  }
  view.append(
    heading('Deliveries'),
    filterForm(params),
    mayChange() ? replaySinceForm(params.get('since'), replayed) : readOnlyNote('Replaying deliveries'),
    page.status,
    page.alert,
    page.listing,
  )
  await load(page)
}

/** The filter as the API takes it, from the route's parameters. */
function filterOf(params: URLSearchParams): DeliveryFilter {
  const filter: Record<string, string> = {}
  for (const name of [...FILTERS, 'cursor']) {
    const value = params.get(name)?.trim()
    if (value) filter[name] = value
  }
  return filter as DeliveryFilter
}

function filterForm(params: URLSearchParams): HTMLFormElement {
  const select = (id: string, name: string, values: readonly string[], anyLabel: string) =>
    h(
      'select',
      { id, name },
      h('option', { value: '' }, anyLabel),
      values.map((value) => h('option', { value, selected: params.get(name) === value }, value)),
    )
  const time = (id: string, name: string) =>
    h('input', { id, name, type: 'datetime-local', step: '1', value: utcInputValue(params.get(name)) })
  const controls = {
    state: select('filter-state', 'state', DELIVERY_STATES, 'Any state'),
    eventType: select('filter-event-type', 'eventType', EVENT_TYPES, 'Any event type'),
    audioId: h('input', {
      id: 'filter-audio-id',
      name: 'audioId',
      type: 'text',
      spellcheck: 'false',
      value: params.get('audioId') ?? '',
    }),
    since: time('filter-since', 'since'),
    until: time('filter-until', 'until'),
  }
  const submit = (event: Event) => {
    event.preventDefault()
    const query = new URLSearchParams()
    for (const name of FILTERS) {
      const value = controls[name].value.trim()
      if (!value) continue
      query.set(name, name === 'since' || name === 'until' ? utcInputInstant(value) : value)
    }
    navigate(`#/deliveries${query.size > 0 ? `?${query}` : ''}`)
  }
  return h(
    'form',
    { class: 'card filters', 'aria-label': 'Filter the deliveries', onsubmit: submit },
    h(
      'div',
      { class: 'fields' },
      field('filter-state', 'State', controls.state),
      field('filter-event-type', 'Event type', controls.eventType),
      field('filter-audio-id', 'Audio ID', controls.audioId),
      field('filter-since', 'Created since (UTC)', controls.since),
      field('filter-until', 'Created before (UTC)', controls.until),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Show'),
      h('a', { class: 'button quiet', href: '#/deliveries' }, 'Clear the filter'),
    ),
  )
}

/** Reads the page of deliveries, drawn again only when it changed; refreshes while one may still move. */
async function load(page: DeliveriesView): Promise<void> {
  stopRefreshing()
  try {
    const answer = await call('listDeliveries', filterOf(page.params))
    if (!page.current()) return
    const fingerprint = JSON.stringify(answer)
    if (fingerprint !== page.shown) {
      const focused = document.activeElement?.id
      page.shown = fingerprint
      page.listing.replaceChildren(deliveryTable(page, answer.items), pager(page, answer))
      if (focused && document.activeElement?.id !== focused) document.getElementById(focused)?.focus()
    }
    if (answer.items.some((d) => MOVING.includes(d.state))) refreshLater(() => load(page), LIVE_REFRESH_MS)
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

const COLUMNS = [
  'Delivery',
  'Created',
  'Event type',
  'Audio ID',
  'Endpoint',
  'State',
  'Attempts',
  '',
] as const

function deliveryTable(page: DeliveriesView, items: readonly PartnerDelivery[]): HTMLElement {
  if (items.length === 0) return h('p', { id: 'no-deliveries' }, 'No delivery matches this filter.')
  return table(
    'Deliveries, newest first',
    COLUMNS,
    items.flatMap((d) => {
      const row = h(
        'tr',
        { 'data-delivery-id': d.deliveryId },
        cell(COLUMNS[0], String(d.deliveryId)),
        cell(COLUMNS[1], stamp(d.createdAt)),
        cell(COLUMNS[2], h('span', { class: 'mono' }, d.eventType)),
        cell(COLUMNS[3], h('span', { class: 'mono' }, d.audioId)),
        cell(COLUMNS[4], d.endpointId === null ? '—' : String(d.endpointId)),
        cell(COLUMNS[5], badge(d.state)),
        cell(COLUMNS[6], attemptsSummary(d)),
        cell(COLUMNS[7], rowActions(page, d)),
      )
      if (!page.open.has(d.deliveryId)) return [row]
      const detail = h('tr', { class: 'timeline-row' }, h('td', { colspan: COLUMNS.length }, attemptList(d)))
      return [row, detail]
    }),
  )
}

function attemptsSummary(d: PartnerDelivery): string {
  const last = d.attempts.at(-1)
  if (!last) return 'none yet'
  const status = last.httpStatus === null ? 'no HTTP answer' : `HTTP ${last.httpStatus}`
  return `${d.attempts.length}, last ${status}`
}

function rowActions(page: DeliveriesView, d: PartnerDelivery): HTMLElement {
  const expanded = page.open.has(d.deliveryId)
  const toggle = h(
    'button',
    {
      type: 'button',
      id: `delivery-${d.deliveryId}-toggle`,
      'aria-expanded': String(expanded),
      'aria-controls': expanded && `delivery-${d.deliveryId}-attempts`,
      'aria-label': `${expanded ? 'Hide' : 'Show'} the attempts of delivery ${d.deliveryId}`,
      onclick: () => {
        if (expanded) page.open.delete(d.deliveryId)
        else page.open.add(d.deliveryId)
        page.shown = ''
        void load(page)
      },
    },
    expanded ? 'Hide attempts' : 'Attempts',
  )
  const replay =
    mayChange() &&
    REPLAYABLE.includes(d.state) &&
    h(
      'button',
      {
        type: 'button',
        id: `delivery-${d.deliveryId}-replay`,
        'aria-label': `Replay delivery ${d.deliveryId}`,
        onclick: () => replayOne(page, d),
      },
      'Replay',
    )
  return h('div', { class: 'row-actions' }, toggle, replay)
}

async function replayOne(page: DeliveriesView, d: PartnerDelivery): Promise<void> {
  page.alert.replaceChildren()
  page.status.replaceChildren()
  try {
    await call('replayDeliveries', { deliveryId: d.deliveryId })
    page.status.textContent = `Delivery ${d.deliveryId} replayed: pushed again with the same eventId.`
    await load(page)
  } catch (error) {
    showError(page.alert, error)
  }
}

/** The next page by the cursor answered, and back to the first. */
function pager(page: DeliveriesView, answer: { nextCursor: string | null; hasMore: boolean }): HTMLElement {
  const to = (cursor: string | null) => {
    const query = new URLSearchParams(page.params)
    if (cursor === null) query.delete('cursor')
    else query.set('cursor', cursor)
    navigate(`#/deliveries${query.size > 0 ? `?${query}` : ''}`)
  }
  const next = answer.nextCursor
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages of deliveries' },
    page.params.has('cursor') &&
      h('button', { type: 'button', id: 'deliveries-first', onclick: () => to(null) }, 'First page'),
    answer.hasMore &&
      next !== null &&
      h('button', { type: 'button', id: 'deliveries-next', onclick: () => to(next) }, 'Next page'),
  )
}
