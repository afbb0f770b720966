/**
 * The operators page (operators.manage: owners): every operator's account, added with a one-time setup
 * link, their role and enterprises changed, disabled or enabled again, their sessions ended.
 */

import { scopeCell } from './access-fields.js'
import { api, enterpriseOptions } from './admin-api.js'
import { alertBox, cell, confirmDialog, h, heading, showError, stamp, statusBox, table } from './dom.js'
import { addForm, changeForm, type Operator, type OperatorsView } from './operator-forms.js'
import { may, notGranted } from './session.js'

interface OperatorsPage extends OperatorsView {
  current: () => boolean
  alert: HTMLElement
  listing: HTMLElement
  /** Runs an action of a row, then lists again; its failure goes to the page's alert. */
  act(work: () => Promise<void>): Promise<void>
}

export async function operators(view: HTMLElement, _params: URLSearchParams, current: () => boolean) {
  document.title = 'Operators · Earshot console'
  view.append(heading('Operators'))
  if (!may('operators.manage')) {
    view.append(notGranted('operators.manage', 'Managing operators'))
    return
  }
  const page: OperatorsPage = {
    current,
    enterprises: [],
    alert: alertBox(),
    status: statusBox(),
    linkPanel: h('div', { class: 'secret-panel', hidden: true }),
    listing: h('div', { class: 'listing' }),
    load: () => loadOperators(page),
    act: async (work) => {
      page.alert.replaceChildren()
      page.status.replaceChildren()
      try {
        await work()
        await page.load()
      } catch (error) {
        showError(page.alert, error)
      }
    },
  }
  try {
    page.enterprises = await enterpriseOptions()
  } catch (error) {
    showError(page.alert, error)
  }
  if (!current()) return
  view.append(addForm(page), page.linkPanel, page.status, page.alert, page.listing)
  await page.load()
}

async function loadOperators(page: OperatorsPage): Promise<void> {
  try {
    const { operators: list } = await api('listOperators')
    if (page.current()) page.listing.replaceChildren(operatorTable(page, list))
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

const COLUMNS = [
  'Email',
  'Name',
  'Role',
  'Enterprises',
  'Enabled',
  'Set up',
  'SSO',
  'Added',
  'Actions',
] as const

function operatorTable(page: OperatorsPage, list: readonly Operator[]): HTMLElement {
  const yesNo = (value: boolean) => (value ? 'yes' : h('span', { class: 'muted' }, 'no'))
  return table(
    'Operators',
    COLUMNS,
    list.map((o) =>
      h(
        'tr',
        { id: `operator-${o.operatorId}`, 'data-email': o.email },
        cell(COLUMNS[0], h('span', { class: 'mono' }, o.email)),
        cell(COLUMNS[1], o.name || h('span', { class: 'muted' }, '—')),
        cell(COLUMNS[2], h('span', { class: `badge role-${o.role}` }, o.role)),
        cell(COLUMNS[3], scopeCell(o.enterprises)),
        cell(COLUMNS[4], o.enabled ? 'yes' : h('span', { class: 'badge state-disabled' }, 'disabled')),
        cell(COLUMNS[5], yesNo(o.setUp)),
        cell(COLUMNS[6], yesNo(o.sso)),
        cell(COLUMNS[7], stamp(o.createdAt)),
        cell(COLUMNS[8], operatorActions(page, o)),
      ),
    ),
  )
}

function operatorActions(page: OperatorsPage, o: Operator): HTMLDivElement {
  return h(
    'div',
    { class: 'row-actions' },
    changeForm(page, o),
    o.enabled
      ? h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Disable ${o.email}`,
            onclick: () => disable(page, o),
          },
          'Disable',
        )
      : h(
          'button',
          {
            type: 'button',
            'aria-label': `Enable ${o.email}`,
            onclick: () =>
              page.act(async () => {
                await api('updateOperator', { params: { operatorId: o.operatorId }, body: { enabled: true } })
                page.status.textContent = `${o.email} may sign in again.`
              }),
          },
          'Enable',
        ),
    h(
      'button',
      { type: 'button', 'aria-label': `End the sessions of ${o.email}`, onclick: () => endSessions(page, o) },
      'End sessions',
    ),
  )
}

async function disable(page: OperatorsPage, o: Operator): Promise<void> {
  const confirmed = await confirmDialog({
    title: `Disable ${o.email}?`,
    message:
      'They can no longer sign in, and their sessions end at once on every instance. You can enable them again.',
    confirmLabel: 'Disable',
    danger: true,
  })
  if (!confirmed) return
  await page.act(async () => {
    await api('updateOperator', { params: { operatorId: o.operatorId }, body: { enabled: false } })
    page.status.textContent = `${o.email} is disabled.`
  })
}

async function endSessions(page: OperatorsPage, o: Operator): Promise<void> {
  await page.act(async () => {
    const { ended } = await api('endOperatorSessions', { params: { operatorId: o.operatorId } })
    page.status.textContent = `Ended ${ended} ${ended === 1 ? 'session' : 'sessions'} of ${o.email}.`
  })
}
