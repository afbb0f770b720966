/** The receiver check of an endpoint's URL, run from its row, and its report: each item, what came back. */
import { api } from './admin-api.js'
import type { CheckItem, ReceiverCheckReport } from './admin-client.js'
import { badge, cell, h, showError, table } from './dom.js'

const COLUMNS = ['Verdict', 'Item', 'Expected', 'What came back'] as const

/** The card the report is drawn in, below the endpoints. */
export function checkCard(): HTMLElement {
  return h('section', {
    id: 'receiver-check',
    class: 'card',
    'aria-labelledby': 'receiver-check-heading',
    'aria-live': 'polite',
    hidden: true,
  })
}

/** Runs the check against the endpoint's URL; the card says it runs, then holds the report or the refusal. */
export async function runCheck(
  card: HTMLElement,
  enterpriseId: number,
  endpoint: { url: string },
): Promise<void> {
  card.hidden = false
  card.replaceChildren(
    h('h2', { id: 'receiver-check-heading' }, `Checking ${endpoint.url}`),
    h(
      'p',
      { class: 'muted' },
      'Pushing the check series, then waiting for its receipt callbacks (up to 60 s after the pushes)…',
    ),
  )
  try {
    const report = await api('checkReceiver', { params: { enterpriseId }, body: { url: endpoint.url } })
    drawReport(card, report)
  } catch (error) {
    const alert = h('div', { role: 'alert', class: 'alert' })
    showError(alert, error)
    card.replaceChildren(
      h('h2', { id: 'receiver-check-heading' }, `The check of ${endpoint.url} could not run`),
      alert,
    )
  }
  card.querySelector<HTMLElement>('#receiver-check-heading')?.focus()
}

function drawReport(card: HTMLElement, report: ReceiverCheckReport): void {
  const failed = report.items.filter((item) => !item.passed && item.severity === 'failure')
  const verdict = report.passed
    ? `Passed: the receiver follows the protocol (sealed with key version ${report.keyVersion}).`
    : `Failed ${failed.length} ${failed.length === 1 ? 'item' : 'items'}: ${failed.map((item) => item.id).join(', ')}.`
  card.replaceChildren(
    h('h2', { id: 'receiver-check-heading', tabindex: '-1' }, `Receiver check of ${report.url}`),
    h('p', { id: 'receiver-check-verdict' }, verdict),
    table(
      'Each item of the check',
      COLUMNS,
      report.items.map((item) =>
        h(
          'tr',
          { 'data-check-item': item.id },
          cell(COLUMNS[0], badge(itemVerdict(item))),
          cell(COLUMNS[1], h('span', { class: 'mono' }, item.id)),
          cell(COLUMNS[2], item.expected),
          cell(COLUMNS[3], item.evidence),
        ),
      ),
    ),
  )
}

function itemVerdict(item: CheckItem): string {
  if (item.passed) return 'passed'
  return item.severity === 'warning' ? 'warning' : 'failed'
}
