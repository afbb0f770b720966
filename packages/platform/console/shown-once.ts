/** A value the API shows this once (an enterprise's secret, an API key, a setup link), with a copy button. */
import { field, h, statusBox } from './dom.js'

export interface ShownOnce {
  /** The id of its read-only field; its note is `${id}-note`. */
  id: string
  title: string
  note: string
  label: string
  value: string
  copyLabel: string
}

/** Shows the value in the panel, selected, until the operator hides it. */
export function showOnce(panel: HTMLElement, shown: ShownOnce): void {
  const output = h('input', {
    id: shown.id,
    type: 'text',
    readonly: true,
    value: shown.value,
    spellcheck: 'false',
    'aria-describedby': `${shown.id}-note`,
  })
  const copied = statusBox()
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(shown.value)
      copied.textContent = 'Copied to the clipboard.'
    } catch {
      output.select()
      copied.textContent = `The browser refused the clipboard: the ${shown.label.toLowerCase()} is selected, copy it by hand.`
    }
  }
  const hide = () => {
    panel.hidden = true
    panel.replaceChildren()
  }
  panel.replaceChildren(
    h('h2', {}, shown.title),
    h('p', { id: `${shown.id}-note` }, shown.note),
    field(shown.id, shown.label, output),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'primary', onclick: copy }, shown.copyLabel),
      h('button', { type: 'button', class: 'quiet', onclick: hide }, 'Hide it'),
    ),
    copied,
  )
  panel.hidden = false
  output.focus()
  output.select()
}
