/**
 * The receiver check's report: its verdict, then each item with what a receiver that follows the protocol
 * does and what came back. The console's endpoints page and the partner portal both draw it.
 */
import type { CheckItem, ReceiverCheckReport } from './admin-client.js'
import { badge, cell, h, table } from './dom.js'

const COLUMNS = ['Verdict', 'Item', 'Expected', 'What came back'] as const

/** Draws the report in the card, its heading `receiver-check-heading`; a failed item's row is marked failed. */
export function drawReport(card: HTMLElement, report: ReceiverCheckReport): void {
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
          { 'data-check-item': item.id, class: `check-${itemVerdict(item)}` },
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
