/** The endpoints page's detail of one endpoint: its settings and health, its recent deliveries and their attempts. */
import type { EndpointDetail } from './admin-client.js'
import { timeline } from './delivery-timeline.js'
import { badge, count, h, stamp } from './dom.js'
import { enabledBadge, rate } from './endpoint-table.js'

/** What of the endpoints page the detail reads and draws in. */
export interface DetailView {
  alert: HTMLElement
  listing: HTMLElement
  detail: HTMLElement
  /** The endpoint whose detail is open, and its deliveries whose attempts are open. */
  openId: number | null
  openDeliveries: Set<number>
  /** The list and the detail as last drawn, so that a refresh redraws only what changed. */
  shown: { list: string; detail: string }
  load(): Promise<void>
}

/** Opens an endpoint's detail below the list, its heading focused. */
export async function openDetail(page: DetailView, endpointId: number): Promise<void> {
  page.alert.replaceChildren()
  page.openId = endpointId
  page.openDeliveries.clear()
  page.shown.detail = ''
  page.shown.list = ''
  await page.load()
  if (page.openId === endpointId) document.getElementById('endpoint-heading')?.focus()
}

export function closeDetail(page: DetailView): void {
  const id = page.openId
  page.openId = null
  page.detail.hidden = true
  page.detail.replaceChildren()
  page.shown.list = ''
  for (const row of page.listing.querySelectorAll('tr[data-endpoint-id]')) row.removeAttribute('aria-current')
  document.getElementById(`endpoint-${id}-open`)?.focus()
}

/** The open endpoint: its settings and health, and its recent deliveries, each with its attempts. */
export function drawDetail(page: DetailView, { endpoint, recentDeliveries }: EndpointDetail): void {
  const fingerprint = JSON.stringify({ endpoint, recentDeliveries })
  if (fingerprint === page.shown.detail) return
  page.shown.detail = fingerprint
  const e = endpoint
  const facts = [
    ['URL', h('span', { class: 'url' }, e.url)],
    ['Description', e.description || '—'],
    ['Event types', e.eventTypes.join(', ')],
    ['Enabled', enabledBadge(e)],
    ['Rate', rate(e.maxPerSecond)],
    ['Added', stamp(e.createdAt)],
    ['Health', badge(e.health.state)],
    ['Why', e.health.reason ?? '—'],
    ['Last success', stamp(e.health.lastSuccessAt)],
    ['Last failure', stamp(e.health.lastFailureAt)],
    ['Waiting', String(e.waiting)],
  ]
  page.detail.replaceChildren(
    h(
      'div',
      { class: 'title-row' },
      h('h2', { id: 'endpoint-heading', tabindex: '-1' }, `Endpoint ${e.endpointId}`),
      h('button', { type: 'button', id: 'endpoint-detail-refresh', onclick: () => page.load() }, 'Refresh'),
      h('button', { type: 'button', class: 'quiet', onclick: () => closeDetail(page) }, 'Close'),
    ),
    h(
      'dl',
      { class: 'facts' },
      facts.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
    ),
    h('h3', { id: 'recent-deliveries-heading' }, 'Recent deliveries'),
    recentList(page, recentDeliveries),
  )
  page.detail.hidden = false
}

function recentList(page: DetailView, deliveries: EndpointDetail['recentDeliveries']): HTMLElement {
  if (deliveries.length === 0) return h('p', { class: 'muted' }, 'No delivery to this endpoint yet.')
  return h(
    'ul',
    { class: 'recent-deliveries', 'aria-labelledby': 'recent-deliveries-heading' },
    deliveries.map((d) => {
      const details = h(
        'details',
        {
          id: `endpoint-delivery-${d.deliveryId}`,
          open: page.openDeliveries.has(d.deliveryId),
          ontoggle: () => {
            if (details.open) page.openDeliveries.add(d.deliveryId)
            else page.openDeliveries.delete(d.deliveryId)
          },
        },
        h(
          'summary',
          { id: `endpoint-delivery-${d.deliveryId}-summary` },
          `Delivery ${d.deliveryId} · ${d.eventType.replace('recording.', '')} · `,
          h('span', { class: 'mono' }, d.audioId),
          ' · ',
          badge(d.state),
          ` · ${count(d.attempts.length, 'attempt')}`,
        ),
        timeline(d),
      )
      return h('li', {}, details)
    }),
  )
}
