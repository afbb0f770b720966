/**
 * The API keys page (keys.manage: owners): keys for scripts and the CLI (EARSHOT_API_KEY), each with a
 * role and enterprises; a new key is shown this once, and a revoked one is refused from its next request.
 */

import { roleField, scopeCell, scopeField } from './access-fields.js'
import { api, enterpriseOptions } from './admin-api.js'
import type { AdminAnswer, Enterprise } from './admin-client.js'
import {
  alertBox,
  cell,
  confirmDialog,
  field,
  h,
  heading,
  showError,
  stamp,
  statusBox,
  table,
} from './dom.js'
import { may, notGranted } from './session.js'
import { showOnce } from './shown-once.js'

type ApiKey = AdminAnswer<'listKeys'>['keys'][number]

interface KeysPage {
  current: () => boolean
  enterprises: Enterprise[]
  alert: HTMLElement
  status: HTMLElement
  keyPanel: HTMLElement
  listing: HTMLElement
  load(): Promise<void>
}

export async function keys(view: HTMLElement, _params: URLSearchParams, current: () => boolean) {
  document.title = 'API keys · Earshot console'
  view.append(heading('API keys'))
  if (!may('keys.manage')) {
    view.append(notGranted('keys.manage', 'Managing API keys'))
    return
  }
  const page: KeysPage = {
    current,
    enterprises: [],
    alert: alertBox(),
    status: statusBox(),
    keyPanel: h('div', { class: 'secret-panel', hidden: true }),
    listing: h('div', { class: 'listing' }),
    load: () => loadKeys(page),
  }
  try {
    page.enterprises = await enterpriseOptions()
  } catch (error) {
    showError(page.alert, error)
  }
  if (!current()) return
  view.append(createForm(page), page.keyPanel, page.status, page.alert, page.listing)
  await page.load()
}

async function loadKeys(page: KeysPage): Promise<void> {
  try {
    const { keys: list } = await api('listKeys')
    if (page.current()) page.listing.replaceChildren(keyTable(page, list))
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

function createForm(page: KeysPage): HTMLFormElement {
  const name = h('input', { id: 'key-name', type: 'text', required: true, maxlength: '200' })
  const role = roleField('key-role', 'viewer')
  const scope = scopeField('key-scope', page.enterprises, null)
  const expires = h('input', {
    id: 'key-expires',
    type: 'text',
    placeholder: '90d',
    pattern: '[1-9][0-9]{0,4}[dh]',
    spellcheck: 'false',
    'aria-describedby': 'key-expires-hint',
  })
  const alert = alertBox()
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'create-key-heading',
      onsubmit: async (event) => {
        event.preventDefault()
        alert.replaceChildren()
        try {
          const body = {
            name: name.value.trim(),
            role: role.select.value as ApiKey['role'],
            enterprises: scope.value(),
            ...(expires.value.trim() && { expires: expires.value.trim() }),
          }
          const created = await api('createKey', { body })
          showOnce(page.keyPanel, {
            id: 'new-key',
            title: `Key ${created.keyId} created`,
            note: `A ${created.role} key. It is shown only this once: copy it now and keep it where the script reads it (EARSHOT_API_KEY for the CLI); it goes out as "Authorization: Bearer".`,
            label: 'API key',
            value: created.key,
            copyLabel: 'Copy key',
          })
          name.value = ''
          expires.value = ''
          await page.load()
        } catch (error) {
          showError(alert, error)
        }
      },
    },
    h('h2', { id: 'create-key-heading' }, 'Create an API key'),
    h(
      'div',
      { class: 'fields' },
      field('key-name', 'Name', name),
      role.element,
      field(
        'key-expires',
        'Expires after (optional)',
        expires,
        'Days or hours, like 90d or 12h; empty: until revoked.',
      ),
    ),
    scope.element,
    alert,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create')),
  )
}

const COLUMNS = [
  'ID',
  'Name',
  'Role',
  'Enterprises',
  'Created by',
  'Created',
  'Expires',
  'Last used',
  'Revoked',
  'Actions',
] as const

function keyTable(page: KeysPage, list: readonly ApiKey[]): HTMLElement {
  if (list.length === 0) return h('p', {}, 'No API key yet.')
  return table(
    'API keys',
    COLUMNS,
    list.map((k) =>
      h(
        'tr',
        { id: `key-${k.keyId}` },
        cell(COLUMNS[0], String(k.keyId)),
        cell(COLUMNS[1], k.name),
        cell(COLUMNS[2], h('span', { class: `badge role-${k.role}` }, k.role)),
        cell(COLUMNS[3], scopeCell(k.enterprises)),
        cell(COLUMNS[4], h('span', { class: 'mono' }, k.createdBy)),
        cell(COLUMNS[5], stamp(k.createdAt)),
        cell(COLUMNS[6], k.expiresAt ? stamp(k.expiresAt) : h('span', { class: 'muted' }, 'never')),
        cell(COLUMNS[7], stamp(k.lastUsedAt)),
        cell(COLUMNS[8], k.revokedAt ? stamp(k.revokedAt) : h('span', { class: 'muted' }, 'no')),
        cell(COLUMNS[9], !k.revokedAt && revokeButton(page, k)),
      ),
    ),
  )
}

function revokeButton(page: KeysPage, k: ApiKey): HTMLButtonElement {
  const revoke = async () => {
    const confirmed = await confirmDialog({
      title: `Revoke key ${k.keyId}?`,
      message: `${k.name} is refused from its next request on, on every instance. A revoked key cannot be restored: create a new one.`,
      confirmLabel: 'Revoke',
      danger: true,
    })
    if (!confirmed) return
    page.alert.replaceChildren()
    try {
      await api('revokeKey', { params: { keyId: k.keyId } })
      page.status.textContent = `Key ${k.keyId} (${k.name}) is revoked.`
      await page.load()
    } catch (error) {
      showError(page.alert, error)
    }
  }
  return h(
    'button',
    { type: 'button', class: 'danger', 'aria-label': `Revoke key ${k.keyId}`, onclick: revoke },
    'Revoke',
  )
}
