/** The overview page: the queue at a glance, push URLs by health, and the enterprises' numbers. */
import { api } from './admin-api.js'
import type { AdminAnswer, PushUrl } from './admin-client.js'
import { COUNTED_STATES } from './console-constants.js'
import {
  alertBox,
  badge,
  cell,
  count,
  h,
  heading,
  showError,
  stamp,
  stateLabel,
  statusBox,
  table,
} from './dom.js'
import { may, notGranted } from './session.js'

type Overview = AdminAnswer<'overview'>

export async function overview(view: HTMLElement, _params: URLSearchParams, current: () => boolean) {
  document.title = 'Overview · Earshot console'
  if (!may('operations.read')) {
    view.append(heading('Overview'), notGranted('operations.read', 'The overview (every enterprise at once)'))
    return
  }
  const alert = alertBox()
  const status = statusBox()
  const asOf = h('span', { class: 'muted' })
  const body = h('div', { class: 'overview' })
  const load = async () => {
    try {
      const data = await api('overview')
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

function overviewSections(data: Overview, reload: () => Promise<void>, status: HTMLElement): HTMLElement[] {
  const { byState, confirmedInWindow } = data.deliveries
  const minutes = Math.round(data.windowSeconds / 60)
  const stat = (value: string | number, text: string, href?: string) =>
    h(
      href ? 'a' : 'div',
      { class: 'stat', href },
      h('span', { class: 'stat-value' }, value),
      h('span', { class: 'stat-label' }, text),
    )
  const rate = data.push.successRate === null ? '—' : `${(data.push.successRate * 100).toFixed(1)}%`
  const ms = (value: number | null) => (value === null ? '—' : `${value} ms`)
  const stateStats = COUNTED_STATES.map((state) =>
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

function endpointTable(endpoints: readonly PushUrl[], reload: () => Promise<void>, status: HTMLElement) {
  const columns = [
    'Push URL',
    'State',
    'Last success',
    'Consecutive failures',
    'Enterprises',
    'Why',
    '',
  ] as const
  return table(
    'Push URLs and their health',
    columns,
    endpoints.map((endpoint) => {
      const alert = alertBox()
      const enable = async () => {
        try {
          const enabled = await api('enablePushUrl', { body: { url: endpoint.url } })
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
            may('endpoints.write') &&
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
