/**
 * A delivery's attempts, as the deliveries section shows them when one is expanded: when each started, how
 * long it took, the HTTP status, and the first 4 KiB of what the receiver answered, always as text.
 */
import { h, stamp } from './dom.js'
import type { PartnerDelivery } from './page-constants.js'

type Attempt = PartnerDelivery['attempts'][number]

/** The attempts of a delivery, oldest first, in the region its row's toggle controls. */
export function attemptList(delivery: PartnerDelivery): HTMLElement {
  const id = `delivery-${delivery.deliveryId}-attempts`
  return h(
    'section',
    { class: 'timeline', id, 'aria-labelledby': `${id}-heading` },
    h('h3', { id: `${id}-heading` }, `Delivery ${delivery.deliveryId}: attempts`),
    h(
      'p',
      { class: 'muted' },
      'Event ',
      h('span', { class: 'mono' }, delivery.eventId),
      ` · ${delivery.eventType} · audio `,
      h('span', { class: 'mono' }, delivery.audioId),
    ),
    delivery.attempts.length === 0
      ? h('p', { class: 'muted' }, 'No attempt yet.')
      : h(
          'ol',
          { class: 'attempts' },
          delivery.attempts.map((attempt, i) => attemptItem(delivery.deliveryId, attempt, i + 1)),
        ),
  )
}

function attemptItem(deliveryId: number, a: Attempt, n: number): HTMLElement {
  const answered = a.httpStatus !== null && a.httpStatus >= 200 && a.httpStatus < 300
  const answerId = `delivery-${deliveryId}-attempt-${n}-answer`
  return h(
    'li',
    { class: `attempt outcome-${answered ? 'acked' : 'failed'}`, 'data-attempt': n },
    h('span', { class: 'attempt-no' }, `#${n}`),
    stamp(a.startedAt),
    h('span', {}, `${a.durationMs} ms`),
    h('span', { class: 'attempt-status' }, a.httpStatus === null ? 'no HTTP answer' : `HTTP ${a.httpStatus}`),
    a.answer === null
      ? h('span', { class: 'muted' }, 'nothing answered')
      : h(
          'div',
          { class: 'answer' },
          h('span', { class: 'answer-label', id: `${answerId}-label` }, 'Answer'),
          // textContent: whatever the receiver answered is shown as it is, never as markup.
          h('pre', { id: answerId, 'aria-labelledby': `${answerId}-label`, tabindex: '0' }, a.answer),
        ),
  )
}
