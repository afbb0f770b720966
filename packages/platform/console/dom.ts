/**
 * The console's DOM and formatting helpers: pages are built with these, never from HTML strings. The
 * partner portal loads this module too, so it imports nothing a browser would fetch (types only).
 */
import type { Enterprise } from './admin-client.js'

/** A listener, for an attribute named `on…` (onclick, onsubmit, …). */
export type Listener = (event: Event) => unknown
/** An element's attributes: left out when undefined, null or false; present and empty when true. */
export type Attributes = Record<string, string | number | boolean | null | undefined | Listener>
type Leaf = Node | string | number | false | null | undefined
/** What an element holds: nodes, and text; left out when undefined, null or false. */
export type Child = Leaf | readonly Leaf[]

/** An element with attributes (`on…` ones are listeners) and children (strings become text). */
export function h<Tag extends keyof HTMLElementTagNameMap>(
  tag: Tag,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[Tag] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    if (typeof value === 'function') element.addEventListener(name.slice(2), value)
    else if (name === 'class') element.className = String(value)
    else element.setAttribute(name, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

function append(element: HTMLElement, children: Child[]): void {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/**
 * An instant in UTC, with its zone, as 2026-11-26 14:03:07 UTC: every operator reads the same time, whatever
 * the browser's zone, in the zone the API and the CLI give instants in. The instant as given is in the tooltip.
 */
export function stamp(iso: string | null | undefined): HTMLTimeElement | string {
  if (!iso) return '—'
  const valid = !Number.isNaN(new Date(iso).getTime())
  return h('time', { datetime: valid && iso, title: iso }, stampText(iso))
}

/** The text of an instant's stamp: as given when it is not one. */
export function stampText(iso: string): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  return `${day} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`
}

/**
 * An instant as a datetime-local input holds it, in UTC like every time the console shows, to the second:
 * the deliveries filter reads the input back as UTC (utcInputInstant).
 */
export function utcInputValue(iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
}

/** What a datetime-local input holds, read as UTC, as an instant the API takes. */
export function utcInputInstant(value: string): string {
  return new Date(`${value.length === 16 ? `${value}:00` : value}Z`).toISOString()
}

export const stateLabel = (state: string) => state.replace('_', ' ')
export const badge = (state: string) => h('span', { class: `badge state-${state}` }, stateLabel(state))
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** An alert region, kept in the page (empty) so that screen readers announce what is put in it. */
export function alertBox() {
  return h('p', { class: 'alert', role: 'alert' })
}

export function statusBox() {
  return h('p', { class: 'status', role: 'status' })
}

/** A refusal as an API words it: the admin client's, or the portal's. */
export interface Refused {
  code: number | null | undefined
  msg: string
  status: number
}

export function isRefusal(error: unknown): error is Refused {
  const { msg, status } = (error ?? {}) as Partial<Refused>
  return error instanceof Error && typeof msg === 'string' && typeof status === 'number'
}

/** The API the pages call, as an error that kept it from answering names it. */
let apiName = 'The admin API'

/** Names the API the pages call (the portal's are not the admin API's). */
export function nameTheApi(name: string): void {
  apiName = name
}

/** Shows an error in an alert: a refusal as the API words it, with its code. */
export function showError(box: HTMLElement, error: unknown): void {
  if (isRefusal(error)) {
    box.replaceChildren(
      error.msg,
      ' ',
      h('span', { class: 'code' }, `(${error.code ?? 'no code'}, HTTP ${error.status})`),
    )
  } else {
    box.replaceChildren(`${apiName} could not be reached: ${(error as Error | undefined)?.message ?? error}`)
  }
}

export function label(forId: string, text: string): HTMLLabelElement {
  return h('label', { for: forId }, text)
}

export function field(id: string, text: string, control: HTMLElement, hint?: string): HTMLDivElement {
  return h(
    'div',
    { class: 'field' },
    label(id, text),
    control,
    hint && h('small', { id: `${id}-hint` }, hint),
  )
}

export function heading(text: string): HTMLHeadingElement {
  return h('h1', { tabindex: '-1' }, text)
}

/** A table whose cells carry their column's name, which the phone layout shows beside each value. */
export function table(caption: string, columns: readonly string[], rows: readonly Node[]): HTMLTableElement {
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

export function cell(column: string, ...content: Child[]): HTMLTableCellElement {
  return h('td', { 'data-label': column }, ...content)
}

/** Asks before an action: resolves true when the operator confirms. */
export function confirmDialog({
  title,
  message,
  confirmLabel,
  danger = false,
}: {
  title: string
  message: string
  /** Without it, the dialog only tells (its one button is Cancel). */
  confirmLabel?: string
  danger?: boolean
}): Promise<boolean> {
  return new Promise((resolve) => {
    const cancel = h(
      'button',
      { type: 'button', class: 'quiet', onclick: (): void => dialog.close('cancel') },
      'Cancel',
    )
    const confirm =
      confirmLabel &&
      h(
        'button',
        {
          type: 'button',
          class: danger ? 'danger' : 'primary',
          onclick: (): void => dialog.close('confirm'),
        },
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

export function enterpriseSelect(
  id: string,
  enterprises: readonly Enterprise[],
  selected: string | null,
  anyLabel?: string,
): HTMLSelectElement {
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
