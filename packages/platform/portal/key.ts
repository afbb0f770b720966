/**
 * The key section: rotating the enterprise's key (a manage session's). The new secret is shown once; the
 * previous key keeps working for the grace period, so the partner's systems can switch over unhurried.
 */
import { alertBox, confirmDialog, h, heading, showError } from './dom.js'
import { call } from './portal-api.js'
import { mayChange, readOnlyNote } from './portal-session.js'
import { showOnce } from './shown-once.js'

export function key(view: HTMLElement, _params: URLSearchParams, current: () => boolean): void {
  view.append(
    heading('Key'),
    h(
      'p',
      { class: 'muted' },
      'Your key seals every request you send and every push you receive. Rotating it makes a new secret; the previous key stays valid for the grace period, then only the new one works.',
    ),
  )
  if (!mayChange()) {
    view.append(readOnlyNote('Rotating the key'))
    return
  }
  const alert = alertBox()
  const panel = h('section', { id: 'new-key', class: 'secret-panel', 'aria-live': 'polite', hidden: true })
  const button = h('button', { type: 'button', class: 'danger', id: 'rotate-key' }, 'Rotate the key')
  button.addEventListener('click', async () => {
    alert.replaceChildren()
    const confirmed = await confirmDialog({
      title: 'Rotate the key?',
      message:
        'A new secret is made and shown once. The previous key keeps working for the grace period: switch your systems to the new one before it ends.',
      confirmLabel: 'Rotate',
      danger: true,
    })
    if (!confirmed || !current()) return
    button.disabled = true
    try {
      const { keyVersion, secret } = await call('rotateKey', {})
      if (!current()) return
      showOnce(panel, {
        id: 'new-secret',
        title: `The new key: version ${keyVersion}`,
        note: `Copy it now: it is shown this once. Seal with key version ${keyVersion} from now on; the previous key stays valid for the grace period, then stops working.`,
        label: 'Secret',
        value: secret,
        copyLabel: 'Copy the secret',
      })
    } catch (error) {
      showError(alert, error)
    } finally {
      button.disabled = false
    }
  })
  view.append(h('div', { class: 'card' }, h('div', { class: 'actions' }, button), alert), panel)
}
