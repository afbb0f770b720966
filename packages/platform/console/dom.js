/** The console's DOM and formatting helpers: pages are built with these, never from HTML strings. */
import { Refusal } from './admin-api.js'

/** An element with attributes (`on…` ones are listeners) and children (strings become text). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value)
    else if (name === 'class') element.className = value
    else element.setAttribute(name, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
}

const pad = (n, width = 2) => String(n).padStart(width, '0')

/**
 * An instant in UTC, with its zone, as 2026-11-26 14:03:07 UTC: every operator reads the same time, whatever
 * the browser's zone, in the zone the API and the CLI give instants in. The instant as given is in the tooltip.
 */
export function stamp(iso) {
  if (!iso) return '—'
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return h('time', { title: iso }, iso)
  return h('time', { datetime: iso, title: iso }, utcText(d))
}

function utcText(d) {
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  return `${day} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`
}

/**
 * An instant as a datetime-local input holds it, in UTC like every time the console shows, to the second:
 * the deliveries filter reads the input back as UTC (utcInputInstant).
 */
export function utcInputValue(iso) {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
}

/** What a datetime-local input holds, read as UTC, as an instant the API takes. */
export function utcInputInstant(value) {
  return new Date(`${value.length === 16 ? `${value}:00` : value}Z`).toISOString()
}

export const stateLabel = (state) => state.replace('_', ' ')
export const badge = (state) => h('span', { class: `badge state-${state}` }, stateLabel(state))
export const count = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** An alert region, kept in the page (empty) so that screen readers announce what is put in it. */
export function alertBox() {
  return h('p', { class: 'alert', role: 'alert' })
}

export function statusBox() {
  return h('p', { class: 'status', role: 'status' })
}

/** Shows an error in an alert: a refusal as the API words it, with its code. */
export function showError(box, error) {
  if (error instanceof Refusal) {
    box.replaceChildren(
      error.msg,
      ' ',
      h('span', { class: 'code' }, `(${error.code ?? 'no code'}, HTTP ${error.status})`),
    )
  } else {
    box.replaceChildren(`The admin API could not be reached: ${error?.message ?? error}`)
  }
}

export function label(forId, text) {
  return h('label', { for: forId }, text)
}

export function field(id, text, control, hint) {
  return h(
    'div',
    { class: 'field' },
    label(id, text),
    control,
    hint && h('small', { id: `${id}-hint` }, hint),
  )
}

export function heading(text) {
  return h('h1', { tabindex: '-1' }, text)
}

/** A table whose cells carry their column's name, which the phone layout shows beside each value. */
export function table(caption, columns, rows) {
  return h(
    'table',
    {},
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h('tbody', {}, rows),
  )
}

export function cell(column, ...content) {
  return h('td', { 'data-label': column }, ...content)
}

/** Asks before an action: resolves true when the operator confirms. */
export function confirmDialog({ title, message, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    const cancel = h(
      'button',
      { type: 'button', class: 'quiet', onclick: () => dialog.close('cancel') },
      'Cancel',
    )
    const confirm =
      confirmLabel &&
      h(
        'button',
        { type: 'button', class: danger ? 'danger' : 'primary', onclick: () => dialog.close('confirm') },
        confirmLabel,
      )
    const dialog = h(
      'dialog',
      { 'aria-labelledby': 'dialog-title', 'aria-describedby': 'dialog-message' },
      h('h2', { id: 'dialog-title' }, title),
      h('p', { id: 'dialog-message' }, message),
      h('div', { class: 'actions' }, cancel, confirm),
    )
    dialog.addEventListener('close', () => {
      dialog.remove()
      resolve(dialog.returnValue === 'confirm')
    })
    document.body.append(dialog)
    dialog.showModal()
    cancel.focus()
  })
}

export function enterpriseSelect(id, enterprises, selected, anyLabel) {
  return h(
    'select',
    { id, name: 'enterpriseId', required: !anyLabel },
    h('option', { value: '' }, anyLabel ?? 'Choose an enterprise'),
    enterprises.map((e) =>
      h(
        'option',
        { value: e.enterpriseId, selected: String(e.enterpriseId) === selected },
        `${e.enterpriseId} · ${e.name}${e.disabled ? ' (disabled)' : ''}`,
      ),
    ),
  )
}
