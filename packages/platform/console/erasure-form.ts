/**
 * The form that requests an erasure (erasures.write): an enterprise, then a device's UID or audioIds, and a
 * reason; asked first, since nothing brings the recordings back. The device's UID goes to the API once and
 * is cleared from the form: the platform keeps only its hash, and the page never shows it again.
 */
import { api } from './admin-api.js'
import type { Enterprise } from './admin-client.js'
import { alertBox, confirmDialog, enterpriseSelect, field, h, showError } from './dom.js'

/** What the form says once an erasure is requested: its id, and how many recordings it covers. */
export type ErasureRequested = (erasureId: number, recordings: number) => Promise<void>

interface Subject {
  body: { deviceUid: string } | { audioIds: string[] }
  /** The confirmation's title. */
  title: string
}

export function erasureForm(
  enterprises: readonly Enterprise[],
  selected: string | null,
  requested: ErasureRequested,
): HTMLFormElement {
  const enterprise = enterpriseSelect('erasure-enterprise', enterprises, selected)
  const radio = (value: string, checked: boolean) =>
    h('input', { type: 'radio', name: 'erasure-subject', id: `erasure-by-${value}`, value, checked })
  const byDevice = radio('device', true)
  const byAudio = radio('audio', false)
  const deviceUid = h('input', {
    id: 'erasure-device-uid',
    type: 'text',
    maxlength: '128',
    spellcheck: 'false',
  })
  const audioIds = h('textarea', { id: 'erasure-audio-ids', rows: '3', spellcheck: 'false', disabled: true })
  const reason = h('input', { id: 'erasure-reason', type: 'text', maxlength: '500' })
  const alert = alertBox()
  const choose = () => {
    deviceUid.disabled = !byDevice.checked
    audioIds.disabled = byDevice.checked
  }
  byDevice.addEventListener('change', choose)
  byAudio.addEventListener('change', choose)
  const option = (input: HTMLInputElement, text: string) =>
    h('div', { class: 'choice' }, input, h('label', { for: input.id }, text))

  const submit = async (event: Event) => {
    event.preventDefault()
    alert.replaceChildren()
    const subject = subjectOf(byDevice.checked, deviceUid.value, audioIds.value, enterprise.value)
    if (typeof subject === 'string') {
      alert.textContent = subject
      return
    }
    const confirmed = await confirmDialog({
      title: subject.title,
      message:
        'Each recording is deleted and pushed as recording.deleted to every endpoint, its stored audio removed, and the answers kept from its pushes dropped; the partners are asked to erase their copies. The console cannot bring them back.',
      confirmLabel: 'Erase',
      danger: true,
    })
    if (!confirmed) return
    try {
      const created = await api('createErasure', {
        params: { enterpriseId: Number(enterprise.value) },
        body: { ...subject.body, ...(reason.value.trim() && { reason: reason.value.trim() }) },
      })
      deviceUid.value = ''
      audioIds.value = ''
      reason.value = ''
      await requested(created.erasureId, created.recordings)
    } catch (error) {
      showError(alert, error)
    }
  }
  return h(
    'form',
    { class: 'card', 'aria-labelledby': 'erasure-create-heading', onsubmit: submit },
    h('h2', { id: 'erasure-create-heading' }, 'Erase recordings'),
    h('div', { class: 'fields' }, field('erasure-enterprise', 'Enterprise', enterprise)),
    h(
      'fieldset',
      { class: 'scope' },
      h('legend', {}, 'What to erase'),
      option(byDevice, 'Every recording of a device'),
      option(byAudio, 'Recordings by audioId'),
    ),
    h(
      'div',
      { class: 'fields' },
      field('erasure-device-uid', 'Device UID', deviceUid, 'Kept only as a hash: it is not shown again.'),
      field('erasure-audio-ids', 'AudioIds', audioIds, 'One per line, or separated by spaces or commas.'),
      field('erasure-reason', 'Reason (optional)', reason, 'A ticket number: never the person’s data.'),
    ),
    alert,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'danger' }, 'Erase…')),
  )
}

/** What the form asks to erase, or what is missing. */
function subjectOf(
  byDevice: boolean,
  deviceUid: string,
  audioIdsText: string,
  enterpriseId: string,
): Subject | string {
  if (!enterpriseId) return 'Choose the enterprise whose recordings are erased.'
  if (byDevice) {
    if (!deviceUid) return 'Give the UID of the device whose recordings are erased.'
    return {
      body: { deviceUid },
      title: `Erase every recording of device ${deviceUid} in enterprise ${enterpriseId}?`,
    }
  }
  const audioIds = [...new Set(audioIdsText.split(/[\s,]+/).filter(Boolean))]
  if (audioIds.length === 0) return 'Give the audioIds of the recordings to erase.'
  const what = audioIds.length === 1 ? `recording ${audioIds[0]}` : `${audioIds.length} recordings`
  return { body: { audioIds }, title: `Erase ${what} of enterprise ${enterpriseId}?` }
}
