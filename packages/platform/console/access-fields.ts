/** The fields the operators and keys pages share: a role, and the enterprises it is limited to. */
import type { Enterprise } from './admin-client.js'
import { ROLE_NAMES, ROLES } from './console-constants.js'
import { field, h } from './dom.js'

export type RoleName = (typeof ROLE_NAMES)[number]

/** A role's select, its hint listing what the chosen role grants. */
export function roleField(
  id: string,
  selected: RoleName,
  text = 'Role',
): {
  element: HTMLDivElement
  select: HTMLSelectElement
} {
  const hint = () => `Grants ${ROLES[select.value as RoleName]?.join(', ') ?? 'nothing'}.`
  const select = h(
    'select',
    {
      id,
      name: 'role',
      'aria-describedby': `${id}-hint`,
      onchange: () => {
        const small = document.getElementById(`${id}-hint`)
        if (small) small.textContent = hint()
      },
    },
    ROLE_NAMES.map((role) => h('option', { value: role, selected: role === selected }, role)),
  )
  return { element: field(id, text, select, hint()), select }
}

/**
 * The enterprises a role reaches: every one (those created later too), or only those checked. Enterprises
 * the list does not show (outside the signed-in operator's own scope) stay as they were.
 */
export function scopeField(
  id: string,
  enterprises: readonly Enterprise[],
  selected: readonly number[] | null,
): { element: HTMLFieldSetElement; value: () => number[] | null } {
  const radio = (value: string, checked: boolean) =>
    h('input', { type: 'radio', name: id, id: `${id}-${value}`, value, checked })
  const every = radio('every', selected === null)
  const only = radio('only', selected !== null)
  const boxes = enterprises.map((e) =>
    h('input', {
      type: 'checkbox',
      id: `${id}-${e.enterpriseId}`,
      value: String(e.enterpriseId),
      checked: selected?.includes(e.enterpriseId) === true,
      // Checking one limits the role to those checked.
      onchange: () => {
        only.checked = true
      },
    }),
  )
  const option = (input: HTMLInputElement, text: string) =>
    h('div', { class: 'choice' }, input, h('label', { for: input.id }, text))
  const element = h(
    'fieldset',
    { class: 'scope' },
    h('legend', {}, 'Enterprises'),
    option(every, 'Every enterprise'),
    option(only, 'Only these:'),
    enterprises.length === 0
      ? h('p', { class: 'muted' }, 'No enterprise yet.')
      : h(
          'ul',
          { class: 'checks', 'aria-label': 'Enterprises it is limited to' },
          enterprises.map((e, i) =>
            h('li', {}, option(boxes[i] as HTMLInputElement, `${e.enterpriseId} · ${e.name}`)),
          ),
        ),
  )
  const value = () => {
    if (every.checked) return null
    const listed = new Set(enterprises.map((e) => e.enterpriseId))
    const unlisted = (selected ?? []).filter((enterpriseId) => !listed.has(enterpriseId))
    return [...unlisted, ...boxes.filter((box) => box.checked).map((box) => Number(box.value))]
  }
  return { element, value }
}

/** An enterprise scope as a table shows it. */
export function scopeCell(enterprises: readonly number[] | null): HTMLSpanElement | string {
  return enterprises === null ? h('span', { class: 'muted' }, 'every enterprise') : enterprises.join(', ')
}
