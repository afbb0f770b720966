/**
 * The endpoints section: the enterprise's push endpoints with their URL's health, added, changed,
 * disabled and enabled again, removed (a manage session's), each one's receiver check a click away; and
 * the enterprise's retention policy, what its endpoints are pushed deletions for.
 */
import { alertBox, confirmDialog, count, h, heading, showError, statusBox } from './dom.js'
import {
  type EndpointControls,
  endpointChanges,
  endpointForm,
  newEndpoint,
  resetControls,
} from './endpoint-fields.js'
import { endpointTable } from './endpoint-table.js'
import { navigate, refreshLater, stopRefreshing } from './navigation.js'
import type { Endpoint } from './page-constants.js'
import { call } from './portal-api.js'
import { mayChange, readOnlyNote, retentionNote } from './portal-session.js'

/** Health changes as pushes come and go: the list is read again this often while it is shown. */
const REFRESH_MS = 10_000

interface EndpointsView {
  current: () => boolean
  alert: HTMLElement
  status: HTMLElement
  listing: HTMLElement
  editor: HTMLElement
  /** The endpoint being edited. */
  editing: number | null
  /** The list last drawn, so that a refresh that changed nothing leaves the focus alone. */
  shown: string
}

export async function endpoints(view: HTMLElement, _params: URLSearchParams, current: () => boolean) {
  const page: EndpointsView = {
    current,
    alert: alertBox(),
    status: statusBox(),
    listing: h('div', { class: 'listing' }),
    editor: h('section', {
      id: 'endpoint-editor',
      class: 'card',
      'aria-labelledby': 'endpoint-editor-heading',
      hidden: true,
    }),
    editing: null,
    shown: '',
  }
  view.append(
    heading('Endpoints'),
    h(
      'p',
      { class: 'muted' },
      'Where Earshot pushes your events: each endpoint gets the event types it is subscribed to, in each recording’s order.',
    ),
    retentionNote(),
    mayChange() ? addForm(page) : readOnlyNote('Adding, changing or removing endpoints'),
    page.status,
    page.alert,
    page.listing,
    page.editor,
  )
  await load(page)
}

function addForm(page: EndpointsView): HTMLFormElement {
  return endpointForm({
    endpoint: null,
    submit: async (controls: EndpointControls) => {
      const added = await call('addEndpoint', newEndpoint(controls))
      resetControls(controls)
      page.status.textContent = `Endpoint ${added.endpointId} added: it gets ${added.eventTypes.join(', ')} at ${added.url}.`
      await load(page)
    },
    cancel: () => {},
  })
}

/** Lists the endpoints, drawn again only when they changed (the focus stays where it was). */
async function load(page: EndpointsView): Promise<void> {
  stopRefreshing()
  try {
    const { items } = await call('listEndpoints', {})
    if (!page.current()) return
    const fingerprint = JSON.stringify(items)
    if (fingerprint !== page.shown) {
      const focused = document.activeElement?.id
      page.shown = fingerprint
      page.listing.replaceChildren(endpointList(page, items))
      if (focused && document.activeElement?.id !== focused) document.getElementById(focused)?.focus()
    }
    refreshLater(() => load(page), REFRESH_MS)
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

/** Runs an action of a row, then lists again; its failure goes to the section's alert. */
async function act(page: EndpointsView, work: () => Promise<string>): Promise<void> {
  page.alert.replaceChildren()
  page.status.replaceChildren()
  try {
    page.status.textContent = await work()
    await load(page)
  } catch (error) {
    showError(page.alert, error)
  }
}

function endpointList(page: EndpointsView, list: readonly Endpoint[]): HTMLElement {
  return endpointTable(list, {
    caption: 'Your push endpoints, in the order they were added',
    empty: 'No endpoint yet: Earshot pushes nowhere for you.',
    actions: (e) => mayChange() && rowActions(page, e),
    lastTimes: true,
  })
}

function rowActions(page: EndpointsView, e: Endpoint): HTMLElement {
  const checkIt = () => navigate(`#/check?${new URLSearchParams({ url: e.url })}`)
  const button = (id: string, text: string, label: string, onclick: () => unknown, danger = false) =>
    h('button', { type: 'button', id, class: danger ? 'danger' : '', 'aria-label': label, onclick }, text)
  return h(
    'div',
    { class: 'row-actions' },
    button(`endpoint-${e.endpointId}-edit`, 'Edit', `Edit endpoint ${e.endpointId}`, () =>
      openEditor(page, e),
    ),
    button(
      `endpoint-${e.endpointId}-toggle`,
      e.enabled ? 'Disable' : 'Enable',
      `${e.enabled ? 'Disable' : 'Enable'} endpoint ${e.endpointId}`,
      () => toggle(page, e),
    ),
    button(
      `endpoint-${e.endpointId}-check`,
      'Check',
      `Check the receiver of endpoint ${e.endpointId}`,
      checkIt,
    ),
    button(
      `endpoint-${e.endpointId}-remove`,
      'Remove',
      `Remove endpoint ${e.endpointId}`,
      () => remove(page, e),
      true,
    ),
  )
}

function toggle(page: EndpointsView, e: Endpoint): Promise<void> {
  return act(page, async () => {
    await call('updateEndpoint', { endpointId: e.endpointId, enabled: !e.enabled })
    return e.enabled
      ? `Endpoint ${e.endpointId} disabled: its deliveries wait until it is enabled again.`
      : `Endpoint ${e.endpointId} enabled: its waiting deliveries go out in order.`
  })
}

async function remove(page: EndpointsView, e: Endpoint): Promise<void> {
  const confirmed = await confirmDialog({
    title: `Remove endpoint ${e.endpointId}?`,
    message: `Nothing more is pushed to ${e.url} for it, and its deliveries not yet confirmed are cancelled.`,
    confirmLabel: 'Remove',
    danger: true,
  })
  if (!confirmed) return
  await act(page, async () => {
    const { cancelled } = await call('removeEndpoint', { endpointId: e.endpointId })
    if (page.editing === e.endpointId) closeEditor(page)
    return `Endpoint ${e.endpointId} removed: ${count(cancelled, 'delivery', 'deliveries')} cancelled.`
  })
}

function openEditor(page: EndpointsView, e: Endpoint): void {
  page.editing = e.endpointId
  const form = endpointForm({
    endpoint: e,
    submit: async (controls) => {
      const changes = endpointChanges(controls, e)
      const changed = Object.keys(changes).length > 0
      if (changed) await call('updateEndpoint', { endpointId: e.endpointId, ...changes })
      closeEditor(page)
      page.status.textContent = `Endpoint ${e.endpointId} ${changed ? 'saved' : 'is unchanged'}.`
      await load(page)
    },
    cancel: () => closeEditor(page),
  })
  const title = h('h2', { id: 'endpoint-editor-heading', tabindex: '-1' }, `Edit endpoint ${e.endpointId}`)
  page.editor.replaceChildren(title, form)
  page.editor.hidden = false
  page.editor.querySelector('input')?.focus()
}

function closeEditor(page: EndpointsView): void {
  const id = page.editing
  page.editing = null
  page.editor.hidden = true
  page.editor.replaceChildren()
  document.getElementById(`endpoint-${id}-edit`)?.focus()
}
