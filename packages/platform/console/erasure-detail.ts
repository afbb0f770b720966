/**
 * One erasure on the erasures page: where it stands, each endpoint's deletions (acknowledged, confirmed
 * erased by the partner), and its signed report to download as the API gives it, for a data-protection file.
 */
import { api } from './admin-api.js'
import type { AdminAnswer } from './admin-client.js'
import { alertBox, badge, cell, h, showError, stamp, table } from './dom.js'

export type ErasureDetail = AdminAnswer<'showErasure'>

/** What each state means, beside its badge. */
export const STATE_MEANS: Record<ErasureDetail['state'], string> = {
  running: 'Recordings are being deleted, or their deletions wait for an endpoint’s acknowledgement.',
  complete: 'Every recording is deleted, its audio and copies gone, every deletion acknowledged.',
  confirmed: 'Every partner that had a recording also confirmed erasing it.',
}

const KINDS: Record<ErasureDetail['kind'], string> = {
  device: "a device's recordings",
  audio: 'recordings by audioId',
  retention: 'the retention policy',
}

const PROGRESS = ['Endpoint', 'Deletions', 'Acknowledged', 'Confirmed'] as const

/** Draws the erasure in the section given, with a Close link back to the list. */
export function drawErasure(section: HTMLElement, erasure: ErasureDetail, closeHref: string): void {
  const facts: [string, Node | string][] = [
    ['Enterprise', String(erasure.enterpriseId)],
    ['What', KINDS[erasure.kind]],
    ['State', h('span', {}, badge(erasure.state), ' ', STATE_MEANS[erasure.state])],
    ['Recordings', String(erasure.recordings)],
    ['Subject', erasure.subjectHash ? h('span', { class: 'mono' }, erasure.subjectHash) : '—'],
    ['Reason', erasure.reason || '—'],
    ['Requested', h('span', {}, stamp(erasure.requestedAt), ` by ${erasure.requestedBy.name}`)],
    ['Deleted', stamp(erasure.deletedAt)],
    ['Completed', stamp(erasure.completedAt)],
    ['Confirmed', stamp(erasure.confirmedAt)],
  ]
  const alert = alertBox()
  section.replaceChildren(
    h(
      'div',
      { class: 'title-row' },
      h('h2', { id: 'erasure-heading', tabindex: '-1' }, `Erasure ${erasure.erasureId}`),
      h(
        'button',
        { type: 'button', onclick: () => downloadReport(erasure.erasureId, alert) },
        'Download report',
      ),
      h('a', { href: closeHref, class: 'button quiet' }, 'Close'),
    ),
    alert,
    h(
      'dl',
      { class: 'facts' },
      facts.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
    ),
    h('h3', {}, 'Progress per endpoint'),
    progressTable(erasure.endpoints),
    erasure.subjectHash === null
      ? ''
      : h(
          'p',
          { class: 'muted small' },
          'Subject: the SHA-256 (hex) of "enterpriseId:deviceUid"; whoever knows the device can recompute it. The device’s UID itself is not kept.',
        ),
  )
  section.hidden = false
}

function progressTable(endpoints: ErasureDetail['endpoints']): HTMLElement {
  if (endpoints.length === 0) return h('p', { class: 'muted' }, 'No endpoint was pushed a deletion.')
  return table(
    'Progress per endpoint',
    PROGRESS,
    endpoints.map((each) =>
      h(
        'tr',
        { id: `erasure-endpoint-${each.endpointId}` },
        cell(PROGRESS[0], String(each.endpointId)),
        cell(PROGRESS[1], String(each.deletions)),
        cell(PROGRESS[2], String(each.acknowledged)),
        cell(PROGRESS[3], String(each.confirmed)),
      ),
    ),
  )
}

/**
 * Saves the signed report, {report, signature}, as a JSON file: the signature is over the report's
 * canonical JSON, so the file's indentation does not matter to a verifier.
 */
async function downloadReport(erasureId: number, alert: HTMLElement): Promise<void> {
  alert.replaceChildren()
  try {
    const signed = await api('erasureReport', { params: { erasureId } })
    const file = new Blob([`${JSON.stringify(signed, null, 2)}\n`], { type: 'application/json' })
    const url = URL.createObjectURL(file)
    const link = h('a', { href: url, download: `earshot-erasure-${erasureId}-report.json`, hidden: true })
    document.body.append(link)
    link.click()
    link.remove()
    setTimeout(() => URL.revokeObjectURL(url), 60_000)
  } catch (error) {
    showError(alert, error)
  }
}
