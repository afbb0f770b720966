/** The recordings page: an enterprise's recordings by audioId or device, each one's parts, its audio played and uploaded. */
import { enterpriseOptions, withClient } from './admin-api.js'
import {
  alertBox,
  cell,
  count,
  enterpriseSelect,
  field,
  h,
  heading,
  showError,
  statusBox,
  table,
} from './dom.js'
import { navigate } from './navigation.js'

const PAGE_SIZE = 20
/** Audio Earshot stores is served by the partner listener at signed links of this form. */
const STORED_AUDIO_PATH = '/media/v1/'

export async function recordings(view, params, current) {
  document.title = 'Recordings · Earshot console'
  const filter = new URLSearchParams()
  for (const name of ['enterpriseId', 'audioId', 'deviceUid']) {
    const value = params.get(name)?.trim()
    if (value) filter.set(name, value)
  }
  const page = {
    filter,
    current,
    enterpriseId: Number(filter.get('enterpriseId')),
    /** The page of the list shown, from 1. */
    number: 1,
    alert: alertBox(),
    summary: h('p', { class: 'muted', 'aria-live': 'polite' }),
    listing: h('div', { class: 'listing' }),
    pager: h('nav', { class: 'pager', 'aria-label': 'Pages of recordings', hidden: true }),
    detail: h('section', {
      id: 'recording-detail',
      class: 'card recording-detail',
      'aria-labelledby': 'recording-heading',
      hidden: true,
    }),
    /** The audioId of the recording whose detail is open, and the part of the detail drawn again. */
    openId: null,
    detailBody: h('div'),
  }
  page.load = () => loadRecordings(page)
  page.layout = h(
    'div',
    { class: 'recordings-layout' },
    h('div', { class: 'recordings-list' }, page.summary, page.listing, page.pager),
    page.detail,
  )
  // The heading first: the shell focuses it as soon as the page starts.
  view.append(heading('Recordings'))
  view.append(await filterForm(filter, current), page.alert, page.layout)
  if (!filter.has('enterpriseId')) {
    page.listing.replaceChildren(h('p', {}, 'Choose an enterprise to find its recordings.'))
    return
  }
  await page.load()
}

async function filterForm(filter, current) {
  let list = []
  const alert = alertBox()
  try {
    list = await enterpriseOptions()
  } catch (error) {
    if (current()) showError(alert, error)
  }
  const enterprise = enterpriseSelect('recordings-enterprise', list, filter.get('enterpriseId'))
  const text = (id, name) =>
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
async function loadRecordings(page) {
  const query = { page: page.number, size: PAGE_SIZE }
  for (const name of ['audioId', 'deviceUid']) {
    if (page.filter.has(name)) query[name] = page.filter.get(name)
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
function refocus(id) {
  const element = document.getElementById(id)
  if (element && !element.disabled) return element.focus()
  const other = { 'page-newer': 'page-older', 'page-older': 'page-newer' }[id]
  if (other) document.getElementById(other)?.focus()
}

function renderPager(page, total) {
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE))
  page.summary.textContent =
    total === 0
      ? ''
      : `${count(total, 'recording')}, newest first: page ${page.number} of ${pages}, ${PAGE_SIZE} a page.`
  const turn = (step) => () => {
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

const COLUMNS = ['Audio ID', 'Device', 'Title', 'Parts', 'Duration', '']

function recordingTable(page, items) {
  if (items.length === 0) return h('p', {}, 'No recording matches.')
  return table(
    'Recordings, newest first',
    COLUMNS,
    items.map(({ audioId, data }) => {
      const byDevice = new URLSearchParams({ enterpriseId: page.enterpriseId, deviceUid: data.deviceUid })
      const length = data.recordDuration ?? data.durationMs
      return h(
        'tr',
        { 'data-audio-id': audioId, 'aria-current': audioId === page.openId && 'true' },
        cell(COLUMNS[0], h('span', { class: 'mono' }, audioId)),
        cell(
          COLUMNS[1],
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
        cell(COLUMNS[2], data.title),
        cell(COLUMNS[3], partBadges(data)),
        cell(COLUMNS[4], length === undefined ? '—' : duration(length)),
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

/** The parts a recording has: its audio (stored by Earshot, or a link elsewhere) and its transcript. */
function partBadges(data) {
  const parts = []
  if (data.denoiseUrl !== undefined) {
    parts.push(
      isStored(data.denoiseUrl)
        ? h('span', { class: 'badge part-stored' }, 'stored audio')
        : h('span', { class: 'badge part-link' }, 'audio link'),
    )
  }
  if (data.transcriptId !== undefined) parts.push(h('span', { class: 'badge part-transcript' }, 'transcript'))
  return h('span', { class: 'parts' }, parts)
}

const isStored = (url) => url.includes(STORED_AUDIO_PATH)

/** Reads one recording again (a fresh link to its audio) and shows it. */
async function fetchRecording(page, audioId) {
  const { items } = await withClient((client) => client.listRecordings(page.enterpriseId, { audioId }))
  return items[0]
}

async function openRecording(page, audioId) {
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
    page.detail.replaceChildren(
      h(
        'div',
        { class: 'title-row' },
        title,
        h('button', { type: 'button', class: 'quiet', onclick: () => closeRecording(page) }, 'Close'),
      ),
      page.detailBody,
      uploadForm(page, audioId),
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

function closeRecording(page) {
  const audioId = page.openId
  page.openId = null
  page.detail.hidden = true
  page.detail.replaceChildren()
  page.layout.classList.remove('with-detail')
  markOpen(page)
  for (const row of page.listing.querySelectorAll('tr[data-audio-id]')) {
    if (row.dataset.audioId === audioId) row.querySelector('button')?.focus()
  }
}

function markOpen(page) {
  for (const row of page.listing.querySelectorAll('tr[data-audio-id]')) {
    if (row.dataset.audioId === page.openId) row.setAttribute('aria-current', 'true')
    else row.removeAttribute('aria-current')
  }
}

function drawRecording(page, { audioId, data }) {
  const facts = [
    ['Audio ID', h('span', { class: 'mono' }, audioId)],
    ['Device', h('span', { class: 'mono' }, data.deviceUid)],
    ['Title', data.title],
    ['Parts', partBadges(data)],
    data.recordDuration !== undefined && ['Record duration', duration(data.recordDuration)],
    data.transcriptId !== undefined && ['Transcript ID', String(data.transcriptId)],
    data.durationMs !== undefined && ['Transcript duration', duration(data.durationMs)],
    data.wordsCount !== undefined && ['Words', String(data.wordsCount)],
  ].filter(Boolean)
  page.detailBody.replaceChildren(
    h(
      'dl',
      { class: 'facts' },
      facts.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
    ),
    audioSection(audioId, data.denoiseUrl),
    transcriptSection(data),
  )
}

/** Stored audio plays here (the signed link is the partner listener's); a link elsewhere is shown as it is. */
function audioSection(audioId, url) {
  const title = h('h3', {}, 'Audio')
  if (url === undefined) {
    return h(
      'section',
      { class: 'audio' },
      title,
      h('p', { class: 'muted' }, 'No audio part: upload one below.'),
    )
  }
  const link = /^https?:\/\//i.test(url)
    ? h('a', { href: url, class: 'url' }, url)
    : h('span', { class: 'url' }, url)
  if (!isStored(url)) {
    return h(
      'section',
      { class: 'audio' },
      title,
      h('p', {}, 'A file elsewhere, not stored by Earshot: ', link),
    )
  }
  return h(
    'section',
    { class: 'audio' },
    title,
    h('audio', { controls: true, preload: 'metadata', src: url, 'aria-label': `Audio of ${audioId}` }),
    h('p', {}, h('small', { class: 'muted' }, 'Stored by Earshot, at a signed link that expires: '), link),
  )
}

function transcriptSection(data) {
  const title = h('h3', {}, 'Transcript')
  if (data.transcriptId === undefined) {
    return h('section', { class: 'transcript' }, title, h('p', { class: 'muted' }, 'No transcript.'))
  }
  const sentences = parseSentences(data.transcriptSentences)
  return h(
    'section',
    { class: 'transcript' },
    title,
    sentences === null
      ? h('p', {}, data.transcriptText)
      : h(
          'ol',
          { class: 'sentences', 'aria-label': 'Sentences' },
          sentences.map((s) =>
            h(
              'li',
              {},
              h('span', { class: 'sentence-time mono' }, `${clock(s.beginTime)}–${clock(s.endTime)}`),
              h('span', {}, s.text),
            ),
          ),
        ),
  )
}

/** The sentences of a transcript (a JSON array of {text, beginTime, endTime} in a string), or null. */
function parseSentences(serialized) {
  try {
    const sentences = JSON.parse(serialized)
    const valid = (s) =>
      typeof s?.text === 'string' && Number.isFinite(s.beginTime) && Number.isFinite(s.endTime)
    return Array.isArray(sentences) && sentences.every(valid) ? sentences : null
  } catch {
    return null
  }
}

/** Milliseconds into a recording as m:ss.s. */
function clock(ms) {
  const tenths = Math.round(ms / 100)
  const seconds = Math.floor((tenths % 600) / 10)
  return `${Math.floor(tenths / 600)}:${String(seconds).padStart(2, '0')}.${tenths % 10}`
}

/** A duration in milliseconds as 3.0 s or 4 min 05 s, the milliseconds in the tooltip. */
function duration(ms) {
  const text =
    ms < 60_000
      ? `${(ms / 1000).toFixed(1)} s`
      : `${Math.floor(ms / 60_000)} min ${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')} s`
  return h('span', { title: `${ms} ms` }, text)
}

/** The form that uploads a recording's audio: Earshot stores it, and the detail shows its new link. */
function uploadForm(page, audioId) {
  const alert = alertBox()
  const status = statusBox()
  const file = h('input', {
    id: 'upload-file',
    name: 'file',
    type: 'file',
    accept: 'audio/*',
    required: true,
  })
  const recordDuration = h('input', {
    id: 'upload-duration',
    name: 'recordDuration',
    type: 'number',
    min: '0',
    step: '1',
    inputmode: 'numeric',
    'aria-describedby': 'upload-duration-hint',
  })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Upload')
  return h(
    'form',
    {
      class: 'upload',
      'aria-labelledby': 'upload-heading',
      onsubmit: async (event) => {
        event.preventDefault()
        const chosen = file.files?.[0]
        if (!chosen) return
        alert.replaceChildren()
        status.textContent = `Uploading ${chosen.name}…`
        submit.disabled = true
        let stored
        try {
          const options = {
            contentType: chosen.type || 'application/octet-stream',
            recordDuration: recordDuration.value === '' ? undefined : Number(recordDuration.value),
          }
          stored = await withClient((client) =>
            client.uploadAudio(page.enterpriseId, audioId, chosen, options),
          )
          if (!page.current() || page.openId !== audioId) return
          status.replaceChildren(
            `Stored ${chosen.name}: ${count(stored.bytes, 'byte')} of ${stored.contentType}, SHA-256 `,
            h('span', { class: 'mono', id: 'upload-sha256' }, stored.sha256),
            '.',
          )
          file.value = ''
          recordDuration.value = ''
          const item = await fetchRecording(page, audioId)
          if (!page.current() || page.openId !== audioId) return
          if (item) drawRecording(page, item)
          await page.load()
        } catch (error) {
          if (!stored) status.replaceChildren()
          if (page.current()) showError(alert, error)
        } finally {
          submit.disabled = false
          // A button disabled while it has the focus loses it: it gets it back, for the keyboard.
          if (document.activeElement === document.body && submit.isConnected) submit.focus()
        }
      },
    },
    h('h3', { id: 'upload-heading' }, 'Upload its audio'),
    h(
      'p',
      { class: 'muted' },
      'Earshot stores the file and gives partners signed links to it. It replaces the audio part the recording has.',
    ),
    h(
      'div',
      { class: 'fields' },
      field('upload-file', 'Audio file', file),
      field(
        'upload-duration',
        'Record duration in ms (optional)',
        recordDuration,
        'Kept as it is when empty.',
      ),
    ),
    alert,
    status,
    h('div', { class: 'actions' }, submit),
  )
}
