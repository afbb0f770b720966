/** The receiver check of an endpoint's URL, run from its row, and its report: each item, what came back. */
import { api } from './admin-api.js'
import { drawReport } from './check-report.js'
import { h, showError } from './dom.js'

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
