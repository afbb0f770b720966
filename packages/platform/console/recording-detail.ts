/** One recording in the recordings page: its facts, its audio played, its transcript, and its audio uploaded. */
import { withClient } from './admin-api.js'
import type { AdminAnswer, UploadedAudio } from './admin-client.js'
import { alertBox, count, field, h, showError, statusBox } from './dom.js'

type AnsweredData = AdminAnswer<'listRecordings'>['items'][number]['data']
/** A recording's data, with a transcript or without (then the transcript's fields are absent). */
type RecordingData = AnsweredData & Partial<Extract<AnsweredData, { transcriptId: number }>>
/** A recording as the partner's query answers it: its audioId and data. */
export interface RecordingItem {
  audioId: string
  data: RecordingData
}
/** A sentence of a transcript, with its times in milliseconds into the recording. */
interface Sentence {
  text: string
  beginTime: number
  endTime: number
}

/** What of the recordings page the detail reads and draws in. */
export interface RecordingView {
  enterpriseId: number
  current: () => boolean
  /** The audioId of the recording whose detail is open. */
  openId: string | null
  /** The part of the detail drawn again. */
  detailBody: HTMLElement
  load(): Promise<void>
}

/** Audio Earshot stores is served by the partner listener at signed links of this form. */
const STORED_AUDIO_PATH = '/media/v1/'

/** The parts a recording has: its audio (stored by Earshot, or a link elsewhere) and its transcript. */
export function partBadges(data: RecordingData): HTMLSpanElement {
  const parts: HTMLSpanElement[] = []
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

const isStored = (url: string) => url.includes(STORED_AUDIO_PATH)

/** Reads one recording again (a fresh link to its audio) and shows it. */
export async function fetchRecording(
  page: RecordingView,
  audioId: string,
): Promise<RecordingItem | undefined> {
  const { items } = await withClient((client) => client.listRecordings(page.enterpriseId, { audioId }))
  return items[0]
}

export function drawRecording(page: RecordingView, { audioId, data }: RecordingItem): void {
  const facts = [
    ['Audio ID', h('span', { class: 'mono' }, audioId)],
    ['Device', h('span', { class: 'mono' }, data.deviceUid)],
    ['Title', data.title],
    ['Parts', partBadges(data)],
    data.recordDuration !== undefined && ['Record duration', duration(data.recordDuration)],
    data.transcriptId !== undefined && ['Transcript ID', String(data.transcriptId)],
    data.durationMs !== undefined && ['Transcript duration', duration(data.durationMs)],
    data.wordsCount !== undefined && ['Words', String(data.wordsCount)],
  ].filter((fact) => fact !== false)
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
function audioSection(audioId: string, url: string | undefined): HTMLElement {
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

function transcriptSection(data: RecordingData): HTMLElement {
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
function parseSentences(serialized: string | undefined): Sentence[] | null {
  if (serialized === undefined) return null
  try {
    const sentences: unknown = JSON.parse(serialized)
    const valid = (s: Partial<Sentence> | undefined) =>
      typeof s?.text === 'string' && Number.isFinite(s.beginTime) && Number.isFinite(s.endTime)
    return Array.isArray(sentences) && sentences.every(valid) ? sentences : null
  } catch {
    return null
  }
}

/** Milliseconds into a recording as m:ss.s. */
function clock(ms: number): string {
  const tenths = Math.round(ms / 100)
  const seconds = Math.floor((tenths % 600) / 10)
  return `${Math.floor(tenths / 600)}:${String(seconds).padStart(2, '0')}.${tenths % 10}`
}

/** A duration in milliseconds as 3.0 s or 4 min 05 s, the milliseconds in the tooltip. */
export function duration(ms: number): HTMLSpanElement {
  const text =
    ms < 60_000
      ? `${(ms / 1000).toFixed(1)} s`
      : `${Math.floor(ms / 60_000)} min ${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')} s`
  return h('span', { title: `${ms} ms` }, text)
}

/** The form that uploads a recording's audio: Earshot stores it, and the detail shows its new link. */
export function uploadForm(page: RecordingView, audioId: string): HTMLFormElement {
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
        let stored: UploadedAudio | undefined
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
