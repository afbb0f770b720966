/** The recordings page: an enterprise's recordings by audioId or device, each one's parts, its audio played and uploaded. */
import { enterpriseOptions, withClient } from './admin-api.js'
import type { Enterprise, RecordingQuery } from './admin-client.js'
import {
  alertBox,
  cell,
  count,
  enterpriseSelect,
  field,
  h,
  heading,
  showError,
  stamp,
  statusBox,
  table,
} from './dom.js'
import { navigate } from './navigation.js'
import { deleteSection } from './recording-delete.js'
import {
  drawRecording,
  duration,
  fetchRecording,
  partBadges,
  type RecordingItem,
  type RecordingView,
  uploadForm,
} from './recording-detail.js'
import { may } from './session.js'

const PAGE_SIZE = 20

interface RecordingsPage extends RecordingView {
  /** The filter as the page's address has it. */
  filter: URLSearchParams
  /** The page of the list shown, from 1. */
  number: number
  alert: HTMLElement
  status: HTMLElement
  summary: HTMLElement
  listing: HTMLElement
  pager: HTMLElement
  detail: HTMLElement
  /** The list and the detail beside it. */
  layout: HTMLElement
}

export async function recordings(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  document.title = 'Recordings · Earshot console'
  const filter = new URLSearchParams()
  for (const name of ['enterpriseId', 'audioId', 'deviceUid']) {
    const value = params.get(name)?.trim()
    if (value) filter.set(name, value)
  }
  const summary = h('p', { class: 'muted', 'aria-live': 'polite' })
  const listing = h('div', { class: 'listing' })
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of recordings', hidden: true })
  const detail = h('section', {
    id: 'recording-detail',
    class: 'card recording-detail',
    'aria-labelledby': 'recording-heading',
    hidden: true,
  })
  const page: RecordingsPage = {
    filter,
    current,
    enterpriseId: Number(filter.get('enterpriseId')),
    number: 1,
    alert: alertBox(),
    status: statusBox(),
    summary,
    listing,
    pager,
    detail,
    openId: null,
    detailBody: h('div'),
    layout: h(
      'div',
      { class: 'recordings-layout' },
      h('div', { class: 'recordings-list' }, summary, listing, pager),
      detail,
    ),
    load: () => loadRecordings(page),
  }
  // The heading first: the shell focuses it as soon as the page starts.
  view.append(heading('Recordings'))
  view.append(await filterForm(filter, current), page.status, page.alert, page.layout)
  if (!filter.has('enterpriseId')) {
    page.listing.replaceChildren(h('p', {}, 'Choose an enterprise to find its recordings.'))
    return
  }
  await page.load()
}

async function filterForm(filter: URLSearchParams, current: () => boolean): Promise<HTMLFormElement> {
  let list: Enterprise[] = []
  const alert = alertBox()
  try {
    list = await enterpriseOptions()
  } catch (error) {
    if (current()) showError(alert, error)
  }
  const enterprise = enterpriseSelect('recordings-enterprise', list, filter.get('enterpriseId'))
  const text = (id: string, name: string) =>
    h('input', { id, name, type: 'text', value: filter.get(name) ?? '', spellcheck: 'false' })
  const audioId = text('recordings-audio-id', 'audioId')
  const deviceUid = text('recordings-device', 'deviceUid')
  const enterpriseId = filter.get('enterpriseId')
  return h(
    'form',
    {
      class: 'card filters',
      'aria-label': 'Find recordings',
      onsubmit: (event) => {
        event.preventDefault()
        const query = new URLSearchParams({ enterpriseId: enterprise.value })
        if (audioId.value.trim()) query.set('audioId', audioId.value.trim())
        if (deviceUid.value.trim()) query.set('deviceUid', deviceUid.value.trim())
        navigate(`#/recordings?${query}`)
      },
    },
    h(
      'div',
      { class: 'fields' },
      field('recordings-enterprise', 'Enterprise', enterprise),
      field('recordings-audio-id', 'Audio ID', audioId),
      field('recordings-device', 'Device UID', deviceUid),
    ),
    alert,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Find'),
      h(
        'a',
        {
          href: `#/recordings${enterpriseId ? `?${new URLSearchParams({ enterpriseId })}` : ''}`,
          class: 'button quiet',
        },
        'Clear',
      ),
    ),
  )
}

/** Lists the page of recordings shown, newest first, keeping the focus where it was. */
async function loadRecordings(page: RecordingsPage): Promise<void> {
  const query: RecordingQuery = { page: page.number, size: PAGE_SIZE }
  for (const name of ['audioId', 'deviceUid'] as const) {
    const value = page.filter.get(name)
    if (value !== null) query[name] = value
  }
  try {
    const answer = await withClient((client) => client.listRecordings(page.enterpriseId, query))
    if (!page.current()) return
    page.alert.replaceChildren()
    const focused = document.activeElement?.id
    page.listing.replaceChildren(recordingTable(page, answer.items))
    renderPager(page, answer.total)
    if (focused) refocus(focused)
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

/** Focuses the element of that id drawn again, or the other pager button when it is now disabled. */
function refocus(id: string) {
  const element = document.getElementById(id)
  if (element && !('disabled' in element && element.disabled)) return element.focus()
  const other = OTHER_PAGER_BUTTON[id]
  if (other) document.getElementById(other)?.focus()
}

const OTHER_PAGER_BUTTON: Record<string, string | undefined> = {
  'page-newer': 'page-older',
  'page-older': 'page-newer',
}

function renderPager(page: RecordingsPage, total: number): void {
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE))
  page.summary.textContent =
    total === 0
      ? ''
      : `${count(total, 'recording')}, newest first: page ${page.number} of ${pages}, ${PAGE_SIZE} a page.`
  const turn = (step: number) => () => {
    page.number += step
    page.load()
  }
  page.pager.hidden = pages === 1
  page.pager.replaceChildren(
    h(
      'button',
      { type: 'button', id: 'page-newer', disabled: page.number <= 1, onclick: turn(-1) },
      '← Newer',
    ),
    h('span', { class: 'muted' }, `Page ${page.number} of ${pages}`),
    h(
      'button',
      { type: 'button', id: 'page-older', disabled: page.number >= pages, onclick: turn(1) },
      'Older →',
    ),
  )
}

const COLUMNS = ['Audio ID', 'Recorded', 'Device', 'Title', 'Parts', 'Duration', ''] as const

function recordingTable(page: RecordingsPage, items: readonly RecordingItem[]): HTMLElement {
  if (items.length === 0) return h('p', {}, 'No recording matches.')
  return table(
    'Recordings, newest first',
    COLUMNS,
    items.map(({ audioId, data }) => {
      const byDevice = new URLSearchParams({
        enterpriseId: String(page.enterpriseId),
        deviceUid: data.deviceUid,
      })
      const length = data.recordDuration ?? data.durationMs
      return h(
        'tr',
        { 'data-audio-id': audioId, 'aria-current': audioId === page.openId && 'true' },
        cell(COLUMNS[0], h('span', { class: 'mono' }, audioId)),
        cell(COLUMNS[1], stamp(data.recordedAt)),
        cell(
          COLUMNS[2],
          h(
            'a',
            {
              href: `#/recordings?${byDevice}`,
              class: 'mono',
              'aria-label': `Recordings of device ${data.deviceUid}`,
            },
            data.deviceUid,
          ),
        ),
        cell(COLUMNS[3], data.title),
        cell(COLUMNS[4], partBadges(data)),
        cell(COLUMNS[5], length === undefined ? '—' : duration(length)),
        cell(
          'Actions',
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Open recording ${audioId}`,
              'aria-controls': 'recording-detail',
              onclick: () => openRecording(page, audioId),
            },
            'Open',
          ),
        ),
      )
    }),
  )
}

async function openRecording(page: RecordingsPage, audioId: string): Promise<void> {
  page.alert.replaceChildren()
  try {
    const item = await fetchRecording(page, audioId)
    if (!page.current()) return
    if (!item) {
      page.alert.textContent = `Enterprise ${page.enterpriseId} has no recording ${audioId} any more.`
      return
    }
    const title = h('h2', { id: 'recording-heading', tabindex: '-1' }, `Recording ${audioId}`)
    page.openId = audioId
    const changes = may('recordings.write')
      ? [uploadForm(page, audioId), deleteSection(page, audioId, (message) => deleted(page, message))]
      : []
    page.detail.replaceChildren(
      h(
        'div',
        { class: 'title-row' },
        title,
        h('button', { type: 'button', class: 'quiet', onclick: () => closeRecording(page) }, 'Close'),
      ),
      page.detailBody,
      ...changes,
    )
    drawRecording(page, item)
    page.detail.hidden = false
    page.layout.classList.add('with-detail')
    markOpen(page)
    title.focus()
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

async function deleted(page: RecordingsPage, message: string): Promise<void> {
  closeRecording(page)
  await page.load()
  page.status.textContent = message
  // The recording's row is gone: the focus goes back to the top of the page.
  document.querySelector<HTMLElement>('main h1')?.focus()
}

function closeRecording(page: RecordingsPage): void {
  const audioId = page.openId
  page.openId = null
  page.detail.hidden = true
  page.detail.replaceChildren()
  page.layout.classList.remove('with-detail')
  markOpen(page)
  for (const row of page.listing.querySelectorAll<HTMLTableRowElement>('tr[data-audio-id]')) {
    if (row.dataset.audioId === audioId) row.querySelector('button')?.focus()
  }
}

function markOpen(page: RecordingsPage): void {
  for (const row of page.listing.querySelectorAll<HTMLTableRowElement>('tr[data-audio-id]')) {
    if (row.dataset.audioId === page.openId) row.setAttribute('aria-current', 'true')
    else row.removeAttribute('aria-current')
  }
}
