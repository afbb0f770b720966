/**
 * The receiver check section: runs the protocol's check series against a URL (an endpoint's, or any other
 * the partner is about to use) and shows its report, a failed item marked; a manage session's.
 */
import { drawReport } from './check-report.js'
import { field, h, heading, showError } from './dom.js'
import { call } from './portal-api.js'
import { mayChange, readOnlyNote } from './portal-session.js'

export async function check(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  view.append(
    heading('Receiver check'),
    h(
      'p',
      { class: 'muted' },
      'Earshot pushes a scripted series of events to the URL, sealed with your current key and marked as a check (their audioIds begin with check_), and reports whether your receiver answered each as the protocol asks.',
    ),
  )
  if (!mayChange()) {
    view.append(readOnlyNote('Running the receiver check'))
    return
  }
  const url = h('input', {
    id: 'check-url',
    type: 'text',
    inputmode: 'url',
    required: true,
    spellcheck: 'false',
    list: 'check-endpoint-urls',
    placeholder: 'https://partner.example/earshot',
    value: params.get('url') ?? '',
  })
  const urls = h('datalist', { id: 'check-endpoint-urls' })
  const card = h('section', {
    id: 'receiver-check',
    class: 'card',
    'aria-labelledby': 'receiver-check-heading',
    'aria-live': 'polite',
    hidden: true,
  })
  const button = h('button', { type: 'submit', class: 'primary' }, 'Run the check')
  const run = async (event: Event) => {
    event.preventDefault()
    button.disabled = true
    try {
      await runCheck(card, url.value.trim(), current)
    } finally {
      button.disabled = false
    }
  }
  view.append(
    h(
      'form',
      { class: 'card', 'aria-label': 'Check a receiver', onsubmit: run },
      h(
        'div',
        { class: 'fields' },
        field('check-url', 'URL', url, 'One of your endpoints’ URLs, or another.'),
      ),
      urls,
      h('div', { class: 'actions' }, button),
    ),
    card,
  )
  await offerEndpointUrls(url, urls, current)
}

/** Offers the endpoints' URLs, the first one filled in when the route named none. */
async function offerEndpointUrls(url: HTMLInputElement, urls: HTMLElement, current: () => boolean) {
  try {
    const { items } = await call('listEndpoints', {})
    if (!current()) return
    urls.replaceChildren(...items.map((e) => h('option', { value: e.url })))
    if (!url.value && items[0]) url.value = items[0].url
  } catch {
    // The check runs on any URL typed: the endpoints only fill in a default.
  }
}

async function runCheck(card: HTMLElement, url: string, current: () => boolean): Promise<void> {
  card.hidden = false
  card.replaceChildren(
    h('h2', { id: 'receiver-check-heading' }, `Checking ${url}`),
    h(
      'p',
      { class: 'muted' },
      'Pushing the check series, then waiting for its receipt callbacks (up to 60 s after the pushes)…',
    ),
  )
  try {
    const report = await call('checkEndpoint', { url })
    if (!current()) return
    drawReport(card, report)
  } catch (error) {
    if (!current()) return
    const alert = h('div', { role: 'alert', class: 'alert' })
    showError(alert, error)
    card.replaceChildren(
      h('h2', { id: 'receiver-check-heading', tabindex: '-1' }, `The check of ${url} could not run`),
      alert,
    )
  }
  card.querySelector<HTMLElement>('#receiver-check-heading')?.focus()
}
