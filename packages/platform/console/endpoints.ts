/** The endpoints page: an enterprise's push endpoints, added, changed, held, removed, each one's recent deliveries. */
import { api, enterpriseOptions, Refusal } from './admin-api.js'
import type { Endpoint, EndpointDetail, Enterprise } from './admin-client.js'
import { MOVING_STATES } from './console-constants.js'
import {
  alertBox,
  confirmDialog,
  count,
  enterpriseSelect,
  field,
  h,
  heading,
  showError,
  statusBox,
} from './dom.js'
import { closeDetail, type DetailView, drawDetail, openDetail } from './endpoint-detail.js'
import { closeEditor, type EndpointEditing, endpointForm, openEditor } from './endpoint-form.js'
import { endpointTable } from './endpoint-table.js'
import { navigate, refreshLater, stopRefreshing } from './navigation.js'
import { checkCard, runCheck } from './receiver-check.js'
import { may } from './session.js'

/** While a delivery in the open endpoint's detail may still move on its own, the page refreshes this often. */
const LIVE_REFRESH_MS = 1000

interface EndpointsPage extends EndpointEditing, DetailView {
  current: () => boolean
  /** The receiver check's card. */
  check: HTMLElement
}

export async function endpoints(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  document.title = 'Endpoints · Earshot console'
  const enterpriseId = params.get('enterpriseId')?.trim() ?? ''
  const page: EndpointsPage = {
    enterpriseId: Number(enterpriseId),
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
    check: checkCard(),
    detail: h('section', {
      id: 'endpoint-detail',
      class: 'card endpoint-detail',
      'aria-labelledby': 'endpoint-heading',
      hidden: true,
    }),
    editing: null,
    openId: null,
    openDeliveries: new Set(),
    shown: { list: '', detail: '' },
    load: () => loadEndpoints(page),
  }
  // The heading first: the shell focuses it as soon as the page starts.
  view.append(heading('Endpoints'))
  const list = await enterprisesOrAlert(page)
  view.append(chooser(list, enterpriseId))
  if (!enterpriseId) {
    view.append(page.alert, h('p', {}, 'Choose an enterprise to see its push endpoints.'))
    return
  }
  const enterprise = list.find((e) => String(e.enterpriseId) === enterpriseId)
  view.append(
    h(
      'p',
      { class: 'muted' },
      `Enterprise ${enterpriseId}${enterprise ? ` · ${enterprise.name}` : ''}: each endpoint gets the event types it is subscribed to, in each recording's order.`,
    ),
    ...(may('endpoints.write') ? [endpointForm(page, null)] : []),
    page.status,
    page.alert,
    page.listing,
    page.editor,
    page.check,
    page.detail,
  )
  await page.load()
}

async function enterprisesOrAlert(page: EndpointsPage): Promise<Enterprise[]> {
  try {
    return await enterpriseOptions()
  } catch (error) {
    if (page.current()) showError(page.alert, error)
    return []
  }
}

function chooser(list: Enterprise[], enterpriseId: string): HTMLFormElement {
  const enterprise = enterpriseSelect('endpoints-enterprise', list, enterpriseId)
  return h(
    'form',
    {
      class: 'card filters',
      'aria-label': 'Choose an enterprise',
      onsubmit: (event) => {
        event.preventDefault()
        navigate(`#/endpoints?${new URLSearchParams({ enterpriseId: enterprise.value })}`)
      },
    },
    h('div', { class: 'fields' }, field('endpoints-enterprise', 'Enterprise', enterprise)),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Show')),
  )
}

/**
 * Lists the enterprise's endpoints and draws the open one's detail again, each only when it changed (the
 * focus stays where it was); while a delivery of the open endpoint may still move, it refreshes itself.
 */
async function loadEndpoints(page: EndpointsPage): Promise<void> {
  stopRefreshing()
  const enterpriseId = page.enterpriseId
  try {
    const [{ endpoints: list }, shown] = await Promise.all([
      api('listEnterpriseEndpoints', { params: { enterpriseId } }),
      page.openId === null ? undefined : showEndpoint(page, page.openId),
    ])
    if (!page.current()) return
    const focused = document.activeElement?.id
    const fingerprint = JSON.stringify(list)
    if (fingerprint !== page.shown.list) {
      page.shown.list = fingerprint
      page.listing.replaceChildren(endpointList(page, list))
    }
    if (shown) drawDetail(page, shown)
    else if (page.openId !== null) closeDetail(page)
    if (focused && document.activeElement?.id !== focused) document.getElementById(focused)?.focus()
    if (shown?.recentDeliveries.some((d) => MOVING_STATES.includes(d.state))) {
      refreshLater(page.load, LIVE_REFRESH_MS)
    }
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

/** The endpoint and its recent deliveries, or undefined once it is gone. */
async function showEndpoint(page: EndpointsPage, endpointId: number): Promise<EndpointDetail | undefined> {
  try {
    return await api('showEndpoint', { params: { enterpriseId: page.enterpriseId, endpointId } })
  } catch (error) {
    if (error instanceof Refusal && error.status === 404) return undefined
    throw error
  }
}

/** Runs an action of a row, then lists again; its failure goes to the page's alert. */
async function act(page: EndpointsPage, work: () => Promise<void>): Promise<void> {
  page.alert.replaceChildren()
  page.status.replaceChildren()
  try {
    await work()
    await page.load()
  } catch (error) {
    showError(page.alert, error)
  }
}

function endpointList(page: EndpointsPage, list: readonly Endpoint[]): HTMLElement {
  return endpointTable(list, {
    caption: 'Push endpoints, in the order they were added',
    empty: 'No endpoint yet: this enterprise pushes nowhere.',
    actions: (e) => endpointActions(page, e),
    currentId: page.openId,
  })
}

function endpointActions(page: EndpointsPage, e: Endpoint): HTMLDivElement {
  const id = e.endpointId
  const button = (suffix: string, text: string, label: string, onclick: () => unknown, className?: string) =>
    h(
      'button',
      { type: 'button', id: `endpoint-${id}-${suffix}`, class: className, 'aria-label': label, onclick },
      text,
    )
  return h(
    'div',
    { class: 'row-actions' },
    h(
      'button',
      {
        type: 'button',
        id: `endpoint-${id}-open`,
        'aria-label': `Deliveries of endpoint ${id}`,
        'aria-controls': 'endpoint-detail',
        onclick: () => openDetail(page, id),
      },
      'Deliveries',
    ),
    // Changes and receiver checks need endpoints.write; a role without it sees the deliveries only.
    may('endpoints.write') && changeActions(page, e, button),
  )
}

type ActionButton = (
  suffix: string,
  text: string,
  label: string,
  onclick: () => unknown,
  className?: string,
) => HTMLButtonElement

function changeActions(page: EndpointsPage, e: Endpoint, button: ActionButton): HTMLButtonElement[] {
  const id = e.endpointId
  return [
    button('edit', 'Edit', `Edit endpoint ${id}`, () => openEditor(page, e)),
    button('check', 'Check', `Check the receiver of endpoint ${id}`, () =>
      runCheck(page.check, page.enterpriseId, e),
    ),
    e.enabled
      ? button('toggle', 'Disable', `Disable endpoint ${id}`, () => setEnabled(page, e, false))
      : button('toggle', 'Enable', `Enable endpoint ${id}`, () => setEnabled(page, e, true)),
    ...(e.enabled
      ? []
      : [
          button(
            'discard',
            'Enable, discard held',
            `Cancel the deliveries endpoint ${id} held, and enable it`,
            () => enableDiscardingHeld(page, e),
            'danger',
          ),
        ]),
    button('remove', 'Remove', `Remove endpoint ${id}`, () => removeEndpoint(page, e), 'danger'),
  ]
}

function setEnabled(page: EndpointsPage, e: Endpoint, enabled: boolean): Promise<void> {
  return act(page, async () => {
    await api('updateEndpoint', {
      params: { enterpriseId: page.enterpriseId, endpointId: e.endpointId },
      body: { enabled },
    })
    page.status.textContent = enabled
      ? `Endpoint ${e.endpointId} is enabled: the deliveries it held go out in due order.`
      : `Endpoint ${e.endpointId} is disabled: its deliveries, and those of new events, wait until it is enabled again.`
  })
}

/** Enables an endpoint and cancels what it held meanwhile (and what is queued behind it), after asking. */
async function enableDiscardingHeld(page: EndpointsPage, e: Endpoint): Promise<void> {
  const confirmed = await confirmDialog({
    title: `Enable endpoint ${e.endpointId} and discard what it held?`,
    message:
      `The deliveries it held while disabled (${e.waiting} waiting in all) are cancelled instead of pushed to ` +
      `${e.url}; new events go out as usual. The console cannot undo this.`,
    confirmLabel: 'Enable and discard',
    danger: true,
  })
  if (!confirmed) return
  return act(page, async () => {
    const updated = await api('updateEndpoint', {
      params: { enterpriseId: page.enterpriseId, endpointId: e.endpointId },
      body: { enabled: true, discardHeld: true },
    })
    page.status.textContent = `Endpoint ${e.endpointId} is enabled: ${updated.discarded} held ${updated.discarded === 1 ? 'delivery' : 'deliveries'} discarded.`
  })
}

async function removeEndpoint(page: EndpointsPage, e: Endpoint): Promise<void> {
  const confirmed = await confirmDialog({
    title: `Remove endpoint ${e.endpointId}?`,
    message:
      `Nothing more is pushed to ${e.url} for it, and its deliveries not yet confirmed will be cancelled: ` +
      'waiting, failed, or acknowledged without a receipt. The console cannot undo this.',
    confirmLabel: 'Remove',
    danger: true,
  })
  if (!confirmed) return
  await act(page, async () => {
    const { cancelled } = await api('removeEndpoint', {
      params: { enterpriseId: page.enterpriseId, endpointId: e.endpointId },
    })
    if (page.editing === e.endpointId) closeEditor(page)
    if (page.openId === e.endpointId) closeDetail(page)
    page.status.textContent = `Endpoint ${e.endpointId} removed: ${count(cancelled, 'delivery', 'deliveries')} not yet confirmed cancelled.`
  })
}
