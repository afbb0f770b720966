/** A delivery's timeline: its facts and its attempts, as the deliveries and endpoints pages show them. */
import type { Delivery } from './admin-client.js'
import { badge, h, stamp } from './dom.js'

/** A delivery's facts and its attempts, newest last. */
export function timeline(delivery: Delivery): HTMLElement {
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
