/**
 * The service levels section: of the deliveries created in the last 24 hours and 7 days, how soon their
 * first attempt started (p50, p95), the share acknowledged at it, how soon a receipt followed an
 * acknowledgement (p95), and the backlog now. Read again every 10 s while it is open (the figures may lag
 * that much anyway); shown as a table of text and drawn as charts.
 */
import { alertBox, cell, h, heading, showError, table } from './dom.js'
import { type LevelCharts, levelCharts } from './level-charts.js'
import { refreshLater } from './navigation.js'
import type { Levels } from './page-constants.js'
import { call } from './portal-api.js'

const REFRESH_MS = 10_000
const COLUMNS = ['Figure', 'Last 24 hours', 'Last 7 days'] as const

const ms = (value: number | null) => (value === null ? 'no data' : `${Math.round(value)} ms`)
const share = (value: number | null) => (value === null ? 'no data' : `${(value * 100).toFixed(1)} %`)

/** Each figure's row: its name, and how one window's value reads. */
const FIGURES: [id: string, name: string, text: (levels: Levels) => string][] = [
  ['first-attempt-p50', 'First-attempt latency, p50', (l) => ms(l.firstAttemptP50Ms)],
  ['first-attempt-p95', 'First-attempt latency, p95', (l) => ms(l.firstAttemptP95Ms)],
  ['first-attempt-ack-share', 'Acknowledged at the first attempt', (l) => share(l.firstAttemptAckShare)],
  ['ack-to-receipt-p95', 'Ack to receipt, p95', (l) => ms(l.ackToReceiptP95Ms)],
  ['backlog', 'Backlog now (deliveries waiting)', (l) => String(l.backlog)],
]

export async function levels(view: HTMLElement, _params: URLSearchParams, current: () => boolean) {
  const alert = alertBox()
  const figures = h('div', { id: 'level-figures', 'aria-live': 'polite' })
  const charts = h('div', { class: 'charts', id: 'level-charts' })
  view.append(
    heading('Service levels'),
    h(
      'p',
      { class: 'muted' },
      'Of the deliveries created in each window: the time from an event to its first push, the share your receiver acknowledged at that first push, and the time from its acknowledgement to your receipt callback. Read again every 10 s.',
    ),
    alert,
    figures,
    charts,
  )
  let drawn: LevelCharts | null = null
  const read = async () => {
    try {
      const windows = await Promise.all([
        call('readLevels', { window: '24h' }),
        call('readLevels', { window: '7d' }),
      ])
      if (!current()) return drawn?.dispose()
      alert.replaceChildren()
      figures.replaceChildren(figureTable(windows))
      drawn ??= levelCharts(charts)
      drawn.update(windows, Date.now())
    } catch (error) {
      if (!current()) return drawn?.dispose()
      showError(alert, error)
    }
    refreshLater(read, REFRESH_MS)
  }
  await read()
}

function figureTable(windows: readonly [Levels, Levels]): HTMLElement {
  return table(
    'Service levels of the last 24 hours and 7 days',
    COLUMNS,
    FIGURES.map(([id, name, text]) =>
      h(
        'tr',
        { 'data-figure': id },
        h('th', { scope: 'row', 'data-label': COLUMNS[0] }, name),
        cell(COLUMNS[1], text(windows[0])),
        cell(COLUMNS[2], text(windows[1])),
      ),
    ),
  )
}
