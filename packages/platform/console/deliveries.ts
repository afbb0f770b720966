/** The deliveries page: the log filtered by enterprise, state and audioId, each delivery's timeline, replays. */
import { api, enterpriseOptions } from './admin-api.js'
import type { AdminAnswer, AdminRequest, Enterprise } from './admin-client.js'
import { DELIVERY_STATES_BY_STAGE, MOVING_STATES, REPLAYABLE_STATES } from './console-constants.js'
import { timeline } from './delivery-timeline.js'
import {
  alertBox,
  badge,
  cell,
  confirmDialog,
  count,
  enterpriseSelect,
  field,
  h,
  heading,
  showError,
  stamp,
  stampText,
  stateLabel,
  statusBox,
  table,
  utcInputInstant,
  utcInputValue,
} from './dom.js'
import { navigate, refreshLater, stopRefreshing } from './navigation.js'
import { may } from './session.js'

const PAGE_SIZE = 25
/** While a listed delivery may still move on its own, the deliveries page refreshes this often. */
const LIVE_REFRESH_MS = 1000

type LoggedDelivery = AdminAnswer<'deliveryLog'>['deliveries'][number]
type LogQuery = NonNullable<AdminRequest<'deliveryLog'>['query']>

interface DeliveriesPage {
  /** The filter as the page's address has it. */
  filter: URLSearchParams
  current: () => boolean
  alert: HTMLElement
  status: HTMLElement
  listing: HTMLElement
  pager: HTMLElement
  /** Cursors of the pages seen before this one, for "Newer". */
  cursors: (number | null)[]
  before: number | null
  /** The page as last drawn, so that a live refresh redraws only what changed. */
  shown: string
  /** The deliveries whose timeline is open. */
  open: Set<number>
  load: () => Promise<void>
}

export async function deliveries(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  document.title = 'Deliveries · Earshot console'
  const filter = new URLSearchParams()
  for (const name of ['enterpriseId', 'state', 'audioId', 'from', 'to']) {
    const value = params.get(name)
    if (value) filter.set(name, value)
  }
  const page: DeliveriesPage = {
    filter,
    current,
    alert: alertBox(),
    status: statusBox(),
    listing: h('div', { class: 'listing' }),
    pager: h('nav', { class: 'pager', 'aria-label': 'Pages of deliveries' }),
    cursors: [],
    before: null,
    shown: '',
    open: new Set(),
    load: () => loadDeliveries(page),
  }
  view.append(
    h(
      'div',
      { class: 'title-row' },
      heading('Deliveries'),
      h('button', { type: 'button', onclick: () => page.load() }, 'Refresh'),
    ),
    await filterForm(filter, current),
    ...(may('deliveries.replay') ? [replayToolbar(page)] : []),
    page.status,
    page.alert,
    page.listing,
    page.pager,
  )
  await page.load()
}

function replayToolbar(page: DeliveriesPage): HTMLDivElement {
  return h(
    'div',
    { class: 'toolbar' },
    h('button', { type: 'button', onclick: () => replayRange(page) }, 'Replay range…'),
    h(
      'small',
      { class: 'muted' },
      'Replays the failed and unconfirmed deliveries of the filtered enterprise created in the filtered time range.',
    ),
  )
}

async function loadDeliveries(page: DeliveriesPage): Promise<void> {
  stopRefreshing()
  try {
    const query = new URLSearchParams(page.filter)
    query.set('limit', String(PAGE_SIZE))
    if (page.before !== null) query.set('before', String(page.before))
    // As the page's address has it: the API checks it, and its refusal is shown.
    const answer = await api('deliveryLog', { query: Object.fromEntries(query) as LogQuery })
    if (!page.current()) return
    // Live refreshes redraw only what changed, so focus and open timelines stay put.
    const fingerprint = JSON.stringify(answer)
    if (fingerprint !== page.shown) {
      page.shown = fingerprint
      const focused = document.activeElement?.id
      page.listing.replaceChildren(deliveryTable(page, answer.deliveries))
      renderPager(page, answer.nextBefore)
      if (focused) document.getElementById(focused)?.focus()
    }
    if (answer.deliveries.some((d) => MOVING_STATES.includes(d.state)))
      refreshLater(page.load, LIVE_REFRESH_MS)
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

function renderPager(page: DeliveriesPage, nextBefore: number | null): void {
  page.pager.replaceChildren(
    h(
      'button',
      {
        type: 'button',
        id: 'page-newer',
        disabled: page.cursors.length === 0,
        onclick: () => {
          page.before = page.cursors.pop() ?? null
          page.load()
        },
      },
      '← Newer',
    ),
    h('span', { class: 'muted' }, `Page ${page.cursors.length + 1}`),
    h(
      'button',
      {
        type: 'button',
        id: 'page-older',
        disabled: nextBefore === null,
        onclick: () => {
          page.cursors.push(page.before)
          page.before = nextBefore
          page.load()
        },
      },
      'Older →',
    ),
  )
}

async function replayOne(page: DeliveriesPage, delivery: LoggedDelivery): Promise<void> {
  page.alert.replaceChildren()
  try {
    await api('replayDelivery', { params: { deliveryId: delivery.deliveryId } })
    page.status.textContent = `Delivery ${delivery.deliveryId} is pending again (same eventId ${delivery.eventId}).`
    await page.load()
  } catch (error) {
    showError(page.alert, error)
  }
}

/** Replays the failed and unconfirmed deliveries of the filtered enterprise and time range, once confirmed. */
async function replayRange(page: DeliveriesPage): Promise<void> {
  page.alert.replaceChildren()
  page.status.replaceChildren()
  const enterpriseId = page.filter.get('enterpriseId')
  const from = page.filter.get('from')
  const to = page.filter.get('to')
  if (!enterpriseId || !from || !to) {
    page.alert.textContent =
      'To replay a range, filter by an enterprise and both ends of the time range (from and to), apply the filter, then replay.'
    return
  }
  try {
    const range = { from, to }
    const params = { enterpriseId: Number(enterpriseId) }
    const { replayable } = await api('countReplayable', { params, query: range })
    const span = `created from ${stampText(from)} to ${stampText(to)}`
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
    const { replayed } = await api('replayRange', { params, body: range })
    page.status.textContent = `Replayed ${count(replayed, 'delivery', 'deliveries')}.`
    await page.load()
  } catch (error) {
    showError(page.alert, error)
  }
}

const COLUMNS = [
  'Delivery',
  'Enterprise',
  'Audio ID',
  'Event',
  'State',
  'Attempts',
  'Created',
  'Next attempt',
  '',
] as const

function deliveryTable(page: DeliveriesPage, list: readonly LoggedDelivery[]): HTMLElement {
  if (list.length === 0) return h('p', {}, 'No delivery matches.')
  return table(
    'Deliveries, newest first',
    COLUMNS,
    list.flatMap((d) => deliveryRows(page, d)),
  )
}

/** A delivery's row, and the row of its timeline below it (hidden until its toggle opens it). */
function deliveryRows(page: DeliveriesPage, d: LoggedDelivery): HTMLTableRowElement[] {
  const timelineId = `timeline-${d.deliveryId}`
  const detail = h(
    'tr',
    { class: 'timeline-row', hidden: !page.open.has(d.deliveryId) },
    h('td', { colspan: String(COLUMNS.length), id: timelineId }, timeline(d)),
  )
  const toggle = h(
    'button',
    {
      type: 'button',
      id: `toggle-${d.deliveryId}`,
      'aria-expanded': String(page.open.has(d.deliveryId)),
      'aria-controls': timelineId,
      onclick: () => {
        if (page.open.has(d.deliveryId)) page.open.delete(d.deliveryId)
        else page.open.add(d.deliveryId)
        const expanded = page.open.has(d.deliveryId)
        toggle.setAttribute('aria-expanded', String(expanded))
        detail.hidden = !expanded
      },
    },
    'Timeline',
  )
  const replay =
    REPLAYABLE_STATES.includes(d.state) &&
    may('deliveries.replay') &&
    h(
      'button',
      {
        type: 'button',
        id: `replay-${d.deliveryId}`,
        'aria-label': `Replay delivery ${d.deliveryId}`,
        onclick: () => replayOne(page, d),
      },
      'Replay',
    )
  const row = h(
    'tr',
    { id: `delivery-${d.deliveryId}` },
    cell(COLUMNS[0], String(d.deliveryId)),
    cell(COLUMNS[1], String(d.enterpriseId)),
    cell(COLUMNS[2], h('span', { class: 'mono' }, d.audioId)),
    cell(COLUMNS[3], d.eventType.replace('recording.', '')),
    cell(COLUMNS[4], badge(d.state)),
    cell(COLUMNS[5], String(d.attempts.length)),
    cell(COLUMNS[6], stamp(d.createdAt)),
    cell(COLUMNS[7], stamp(d.nextAttemptAt)),
    cell('Actions', h('div', { class: 'row-actions' }, toggle, replay)),
  )
  return [row, detail]
}

async function filterForm(filter: URLSearchParams, current: () => boolean): Promise<HTMLFormElement> {
  let list: Enterprise[] = []
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
    DELIVERY_STATES_BY_STAGE.map((s) =>
      h('option', { value: s, selected: filter.get('state') === s }, stateLabel(s)),
    ),
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
    value: utcInputValue(filter.get('from')),
  })
  const to = h('input', {
    id: 'filter-to',
    name: 'to',
    type: 'datetime-local',
    step: '1',
    value: utcInputValue(filter.get('to')),
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
        // The inputs hold UTC, as every time the console shows; the API takes instants with an offset.
        if (from.value) query.set('from', utcInputInstant(from.value))
        if (to.value) query.set('to', utcInputInstant(to.value))
        const next = `#/deliveries${query.size > 0 ? `?${query}` : ''}`
        navigate(next)
      },
    },
    h(
      'div',
      { class: 'fields' },
      field('filter-enterprise', 'Enterprise', enterprise),
      field('filter-state', 'State', state),
      field('filter-audio-id', 'Audio ID', audioId),
      field('filter-from', 'Created from (UTC)', from),
      field('filter-to', 'Created before (UTC)', to),
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
