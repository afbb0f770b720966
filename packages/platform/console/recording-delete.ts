/** Deleting a recording from its detail, asked first: a tombstone stays, and the partner is pushed recording.deleted. */
import { api } from './admin-api.js'
import { alertBox, confirmDialog, h, showError } from './dom.js'
import type { RecordingView } from './recording-detail.js'

export function deleteSection(
  page: RecordingView,
  audioId: string,
  deleted: (message: string) => Promise<void>,
): HTMLElement {
  const alert = alertBox()
  const remove = async () => {
    const confirmed = await confirmDialog({
      title: `Delete recording ${audioId}?`,
      message: `Its audio and transcript are deleted and enterprise ${page.enterpriseId}'s partner is pushed recording.deleted; its unconfirmed deliveries are cancelled. The console cannot bring it back.`,
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!confirmed) return
    alert.replaceChildren()
    try {
      await api('deleteRecording', { params: { enterpriseId: page.enterpriseId, audioId } })
      await deleted(`Recording ${audioId} is deleted.`)
    } catch (error) {
      if (page.current()) showError(alert, error)
    }
  }
  return h(
    'section',
    { class: 'delete-recording', 'aria-labelledby': 'delete-heading' },
    h('h3', { id: 'delete-heading' }, 'Delete it'),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        { type: 'button', class: 'danger', 'aria-label': `Delete recording ${audioId}`, onclick: remove },
        'Delete',
      ),
    ),
    alert,
  )
}
