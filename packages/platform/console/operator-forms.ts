/** The operators page's forms: add an operator (their setup link shown once), and change one. */

import { roleField, scopeField } from './access-fields.js'
import { api } from './admin-api.js'
import type { AdminAnswer, Enterprise } from './admin-client.js'
import { alertBox, field, h, label, showError } from './dom.js'
import { scopeText } from './session.js'
import { showOnce } from './shown-once.js'

export type Operator = AdminAnswer<'listOperators'>['operators'][number]

/** What of the operators page its forms read and draw in. */
export interface OperatorsView {
  enterprises: Enterprise[]
  status: HTMLElement
  linkPanel: HTMLElement
  load(): Promise<void>
}

/** Adds an operator; the answer's setup link is shown this once, for the owner to hand over. */
export function addForm(page: OperatorsView): HTMLFormElement {
  const email = h('input', { id: 'operator-email', type: 'email', required: true, spellcheck: 'false' })
  const name = h('input', { id: 'operator-name', type: 'text', maxlength: '200' })
  const role = roleField('operator-role', 'viewer')
  const scope = scopeField('operator-scope', page.enterprises, null)
  const alert = alertBox()
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'add-operator-heading',
      onsubmit: async (event) => {
        event.preventDefault()
        alert.replaceChildren()
        try {
          const body = {
            email: email.value.trim(),
            role: role.select.value as Operator['role'],
            enterprises: scope.value(),
            ...(name.value.trim() && { name: name.value.trim() }),
          }
          const added = await api('addOperator', { body })
          showOnce(page.linkPanel, {
            id: 'setup-link',
            title: `${body.email} added`,
            note: 'Their one-time setup link, valid 7 days, is shown only this once: copy it now and hand it to them. Whoever opens it sets the password of this account.',
            label: 'Setup link',
            value: added.setupUrl,
            copyLabel: 'Copy link',
          })
          email.value = ''
          name.value = ''
          await page.load()
        } catch (error) {
          showError(alert, error)
        }
      },
    },
    h('h2', { id: 'add-operator-heading' }, 'Add an operator'),
    h(
      'div',
      { class: 'fields' },
      field('operator-email', 'Email', email),
      field('operator-name', 'Name (optional)', name),
      role.element,
    ),
    scope.element,
    alert,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Add')),
  )
}

/** An operator's name, role and enterprises, changed in place. */
export function changeForm(page: OperatorsView, operator: Operator): HTMLDetailsElement {
  const id = `operator-${operator.operatorId}`
  const name = h('input', { id: `${id}-name`, type: 'text', maxlength: '200', value: operator.name })
  const role = roleField(`${id}-role`, operator.role, `Role of ${operator.email}`)
  const scope = scopeField(`${id}-scope`, page.enterprises, operator.enterprises)
  const alert = alertBox()
  const details = h(
    'details',
    {},
    h('summary', { 'aria-label': `Change ${operator.email}` }, 'Change'),
    h(
      'form',
      {
        class: 'inline-form',
        onsubmit: async (event) => {
          event.preventDefault()
          alert.replaceChildren()
          try {
            const body = {
              name: name.value.trim(),
              role: role.select.value as Operator['role'],
              enterprises: scope.value(),
            }
            const changed = await api('updateOperator', { params: { operatorId: operator.operatorId }, body })
            page.status.textContent = `Saved ${changed.email}: ${changed.role}, ${scopeText(changed.enterprises)}.`
            await page.load()
          } catch (error) {
            showError(alert, error)
          }
        },
      },
      label(`${id}-name`, `Name of ${operator.email}`),
      name,
      role.element,
      scope.element,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save')),
      alert,
    ),
  )
  return details
}
