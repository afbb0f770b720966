/**
 * The enterprises page: create, list, require issuedAt, set a retention policy (enterprise-retention.ts),
 * rotate keys, set push URLs, disable; each one's endpoints a link away, and its partner portal (portal.ts).
 */
import { api, enterpriseOptions } from './admin-api.js'
import type { Enterprise } from './admin-client.js'
import {
  alertBox,
  badge,
  cell,
  confirmDialog,
  field,
  h,
  heading,
  label,
  showError,
  stamp,
  stampText,
  statusBox,
  table,
} from './dom.js'
import { retentionCell } from './enterprise-retention.js'
import { portalControls } from './portal.js'
import { may } from './session.js'
import { showOnce } from './shown-once.js'

interface EnterprisesPage {
  alert: HTMLElement
  status: HTMLElement
  secretPanel: HTMLElement
  listing: HTMLElement
  load(): Promise<void>
  /** Runs an action of a row, then lists again; its failure goes to the page's alert. */
  act(work: () => Promise<void>): Promise<void>
}

export async function enterprises(view: HTMLElement, _params: URLSearchParams, current: () => boolean) {
  document.title = 'Enterprises · Earshot console'
  const page: EnterprisesPage = {
    alert: alertBox(),
    status: statusBox(),
    secretPanel: h('div', { class: 'secret-panel', hidden: true }),
    listing: h('div'),
    load: async () => {
      try {
        const list = await enterpriseOptions()
        if (!current()) return
        page.listing.replaceChildren(enterpriseTable(page, list))
      } catch (error) {
        if (current()) showError(page.alert, error)
      }
    },
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
  view.append(
    heading('Enterprises'),
    // Creating an enterprise shows its secret: a role without secrets.read never sees the form.
    ...(may('secrets.read') ? [createForm(page)] : []),
    page.secretPanel,
    page.status,
    page.alert,
    page.listing,
  )
  await page.load()
}

/** The form that creates an enterprise and shows its secret once. */
function createForm(page: EnterprisesPage): HTMLFormElement {
  const name = h('input', { id: 'new-name', name: 'name', type: 'text', required: true, maxlength: '200' })
  const pushUrl = h('input', {
    id: 'new-push-url',
    name: 'pushUrl',
    type: 'text',
    inputmode: 'url',
    placeholder: 'https://partner.example/earshot',
    spellcheck: 'false',
  })
  const createAlert = alertBox()
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'create-heading',
      onsubmit: async (event) => {
        event.preventDefault()
        createAlert.replaceChildren()
        try {
          const body = { name: name.value, ...(pushUrl.value.trim() && { pushUrl: pushUrl.value.trim() }) }
          const created = await api('createEnterprise', { body })
          name.value = ''
          pushUrl.value = ''
          showSecret(page.secretPanel, `Enterprise ${created.enterpriseId} created`, created)
          await page.load()
        } catch (error) {
          showError(createAlert, error)
        }
      },
    },
    h('h2', { id: 'create-heading' }, 'Create an enterprise'),
    h(
      'div',
      { class: 'fields' },
      field('new-name', 'Name', name),
      field('new-push-url', 'Push URL (optional)', pushUrl),
    ),
    createAlert,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create')),
  )
}

/** The secret of a created enterprise or a rotated key, shown this once with a copy button. */
function showSecret(
  panel: HTMLElement,
  title: string,
  credentials: { secret: string; keyVersion: number },
): void {
  showOnce(panel, {
    id: 'secret',
    title,
    note: `Key version ${credentials.keyVersion}. This secret is shown only this once: copy it now and hand it to the partner.`,
    label: 'Secret',
    value: credentials.secret,
    copyLabel: 'Copy secret',
  })
}

function enterpriseTable(page: EnterprisesPage, list: readonly Enterprise[]): HTMLElement {
  if (list.length === 0) return h('p', {}, 'No enterprise yet.')
  const columns = [
    'ID',
    'Name',
    'Push URL',
    'Keys',
    'State',
    'issuedAt',
    'Retention',
    'Created',
    'Actions',
  ] as const
  return table(
    'Enterprises',
    columns,
    list.map((e) => {
      const current = e.keys.at(-1)
      const retiring = e.keys.filter((k) => k.retiresAt && new Date(k.retiresAt) > new Date())
      return h(
        'tr',
        {},
        cell(columns[0], String(e.enterpriseId)),
        cell(columns[1], e.name),
        cell(
          columns[2],
          e.pushUrl ? h('span', { class: 'url' }, e.pushUrl) : h('span', { class: 'muted' }, 'none'),
        ),
        cell(
          columns[3],
          `v${current?.keyVersion ?? '?'}`,
          retiring.map((k) => h('small', { class: 'block' }, `v${k.keyVersion} until `, stamp(k.retiresAt))),
        ),
        cell(columns[4], e.disabled ? badge('disabled') : badge('active')),
        cell(columns[5], issuedAtToggle(page, e)),
        cell(columns[6], retentionCell(page, e)),
        cell(columns[7], stamp(e.createdAt)),
        cell(columns[8], e.disabled ? endpointsLink(e) : enterpriseActions(page, e)),
      )
    }),
  )
}

function enterpriseActions(page: EnterprisesPage, e: Enterprise): HTMLDivElement {
  return h(
    'div',
    { class: 'row-actions' },
    endpointsLink(e),
    may('endpoints.write') && pushUrlForm(page, e),
    may('secrets.read') && rotateButton(page, e),
    may('enterprises.write') && disableButton(page, e),
    portalControls({ panel: page.secretPanel, status: page.status, alert: page.alert }, e),
  )
}

/** The endpoints page of an enterprise: its push endpoints, their event types, rates and deliveries. */
function endpointsLink(e: Enterprise): HTMLAnchorElement {
  return h(
    'a',
    {
      href: `#/endpoints?${new URLSearchParams({ enterpriseId: String(e.enterpriseId) })}`,
      class: 'button',
      'aria-label': `Endpoints of enterprise ${e.enterpriseId}`,
    },
    'Endpoints',
  )
}

/**
 * The push URL of an enterprise: set, changed or cleared in place. It is the one-endpoint shorthand: the
 * enterprise's endpoints become this one, for every event type (the others are removed).
 */
function pushUrlForm(page: EnterprisesPage, e: Enterprise): HTMLDetailsElement {
  const inputId = `push-url-${e.enterpriseId}`
  const input = h('input', {
    id: inputId,
    'aria-describedby': `${inputId}-hint`,
    type: 'text',
    inputmode: 'url',
    value: e.pushUrl ?? '',
    placeholder: 'https://partner.example/earshot',
    spellcheck: 'false',
  })
  const formAlert = alertBox()
  const setUrl = (pushUrl: string | null) => async () => {
    formAlert.replaceChildren()
    try {
      await api('setPushUrl', { params: { enterpriseId: e.enterpriseId }, body: { pushUrl } })
      page.status.textContent =
        pushUrl === null
          ? `Enterprise ${e.enterpriseId} no longer pushes.`
          : `Enterprise ${e.enterpriseId} now pushes to ${pushUrl}.`
      await page.load()
    } catch (error) {
      showError(formAlert, error)
      input.focus()
    }
  }
  return h(
    'details',
    {},
    h('summary', {}, 'Push URL'),
    h(
      'form',
      {
        class: 'inline-form',
        onsubmit: (event) => {
          event.preventDefault()
          setUrl(input.value.trim())()
        },
      },
      label(inputId, `Push URL of enterprise ${e.enterpriseId}`),
      input,
      h(
        'small',
        { id: `${inputId}-hint`, class: 'muted' },
        'Its only endpoint then, for every event type: other endpoints are removed, their unconfirmed deliveries cancelled.',
      ),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', class: 'primary' }, 'Save'),
        e.pushUrl && h('button', { type: 'button', onclick: setUrl(null) }, 'Clear'),
      ),
      formAlert,
    ),
  )
}

/** Whether the enterprise's sealed requests must carry issuedAt; changed at once, on every instance within 1 s. */
function issuedAtToggle(page: EnterprisesPage, e: Enterprise): HTMLLabelElement {
  const id = `require-issued-at-${e.enterpriseId}`
  const toggle = h('input', {
    id,
    type: 'checkbox',
    role: 'switch',
    'aria-label': `Require issuedAt of enterprise ${e.enterpriseId}`,
    checked: e.requireIssuedAt,
    disabled: e.disabled || !may('enterprises.write'),
    onchange: () =>
      page.act(async () => {
        const body = { requireIssuedAt: toggle.checked }
        const updated = await api('updateEnterprise', { params: { enterpriseId: e.enterpriseId }, body })
        page.status.textContent = updated.requireIssuedAt
          ? `Enterprise ${e.enterpriseId} now refuses requests without issuedAt (4001).`
          : `Enterprise ${e.enterpriseId} accepts requests without issuedAt again.`
      }),
  })
  return h('label', { for: id, class: 'toggle' }, toggle, ' Required')
}

function rotateButton(page: EnterprisesPage, e: Enterprise): HTMLButtonElement {
  return h(
    'button',
    {
      type: 'button',
      'aria-label': `Rotate the key of enterprise ${e.enterpriseId}`,
      onclick: () =>
        page.act(async () => {
          const rotated = await api('rotateKey', { params: { enterpriseId: e.enterpriseId } })
          showSecret(page.secretPanel, `Enterprise ${e.enterpriseId}: new key`, rotated)
          page.status.textContent = `Key version ${rotated.previousKeyVersion} stays valid until ${stampText(rotated.previousKeyRetiresAt)}.`
        }),
    },
    'Rotate key',
  )
}

function disableButton(page: EnterprisesPage, e: Enterprise): HTMLButtonElement {
  return h(
    'button',
    {
      type: 'button',
      class: 'danger',
      'aria-label': `Disable enterprise ${e.enterpriseId}`,
      onclick: async () => {
        const confirmed = await confirmDialog({
          title: `Disable enterprise ${e.enterpriseId}?`,
          message: `${e.name} can no longer get tokens or query: its tokens stop working on every instance within a second. The console cannot enable it again.`,
          confirmLabel: 'Disable',
          danger: true,
        })
        if (confirmed) {
          await page.act(async () => {
            await api('disableEnterprise', { params: { enterpriseId: e.enterpriseId } })
            page.status.textContent = `Enterprise ${e.enterpriseId} is disabled.`
          })
        }
      },
    },
    'Disable',
  )
}
