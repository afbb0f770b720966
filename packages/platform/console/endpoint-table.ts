/**
 * The table of an enterprise's push endpoints with their health: the console's endpoints page and the
 * partner portal's both draw it, each with its own actions on a row. It imports nothing a browser would
 * fetch but the DOM helpers and the API's names.
 */
import type { Endpoint } from './admin-client.js'
import { EVENT_TYPES } from './console-constants.js'
import { badge, cell, h, stamp, table } from './dom.js'

/** What of an endpoint the table shows. */
export type EndpointRow = Pick<
  Endpoint,
  'endpointId' | 'url' | 'eventTypes' | 'description' | 'enabled' | 'maxPerSecond' | 'health' | 'waiting'
>

export interface EndpointTableOptions<E extends EndpointRow> {
  /** What the table is, for a screen reader. */
  caption: string
  /** What is said in its place when there is no endpoint. */
  empty: string
  /** The endpoint's actions (the console's and the portal's own); false for none. */
  actions(e: E): Node | false
  /** The endpoint whose detail is open below the list: its row is marked current. */
  currentId?: number | null
  /** The last success and failure as columns too (the console shows them in the endpoint's detail). */
  lastTimes?: boolean
}

const FIRST = ['ID', 'URL', 'Event types', 'Description', 'Enabled', 'Rate', 'Health'] as const
const LAST_TIMES = ['Last success', 'Last failure'] as const

export const enabledBadge = (e: Pick<EndpointRow, 'enabled'>) =>
  h('span', { class: `badge state-${e.enabled ? 'active' : 'held'}` }, e.enabled ? 'enabled' : 'disabled')

export const rate = (maxPerSecond: number | null) =>
  maxPerSecond === null ? h('span', { class: 'muted' }, 'no limit') : `${maxPerSecond} / s`

/** The endpoints in the order they were added, each a row of its settings, its health and its actions. */
export function endpointTable<E extends EndpointRow>(
  list: readonly E[],
  options: EndpointTableOptions<E>,
): HTMLElement {
  if (list.length === 0) return h('p', {}, options.empty)
  const times = options.lastTimes ? LAST_TIMES : []
  const columns = [...FIRST, ...times, 'Waiting', 'Actions']
  return table(
    options.caption,
    columns,
    list.map((e) =>
      h(
        'tr',
        { 'data-endpoint-id': e.endpointId, 'aria-current': e.endpointId === options.currentId && 'true' },
        cell('ID', String(e.endpointId)),
        cell('URL', h('span', { class: 'url' }, e.url)),
        cell('Event types', eventTypeList(e)),
        cell('Description', e.description || h('span', { class: 'muted' }, '—')),
        cell('Enabled', enabledBadge(e)),
        cell('Rate', rate(e.maxPerSecond)),
        cell(
          'Health',
          badge(e.health.state),
          e.health.reason && h('small', { class: 'block' }, e.health.reason),
        ),
        options.lastTimes && [
          cell('Last success', stamp(e.health.lastSuccessAt)),
          cell('Last failure', stamp(e.health.lastFailureAt)),
        ],
        cell('Waiting', String(e.waiting)),
        cell('Actions', options.actions(e) || h('span', { class: 'muted' }, '—')),
      ),
    ),
  )
}

/** The four event types, each shown checked or not, as the form's checkboxes are. */
function eventTypeList(e: EndpointRow): HTMLUListElement {
  return h(
    'ul',
    { class: 'event-types', 'aria-label': `Event types of endpoint ${e.endpointId}` },
    EVENT_TYPES.map((type) => {
      const on = e.eventTypes.includes(type)
      return h(
        'li',
        { class: on ? 'on' : 'off' },
        h('span', { class: 'box', 'aria-hidden': 'true' }, on ? '☑' : '☐'),
        h('span', { class: 'visually-hidden' }, on ? 'subscribed: ' : 'not subscribed: '),
        h('span', { class: 'event-name' }, type.replace('recording.', '')),
      )
    }),
  )
}
