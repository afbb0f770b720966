/** The endpoints page's form: adding an endpoint or changing one through the admin API (endpoint-fields.ts). */
import { api } from './admin-api.js'
import type { Endpoint, EndpointChanges } from './admin-client.js'
import { h } from './dom.js'
import {
  type EndpointControls,
  endpointChanges,
  newEndpoint,
  resetControls,
  endpointForm as settingsForm,
} from './endpoint-fields.js'

/** What of the endpoints page the form reads and changes. */
export interface EndpointEditing {
  enterpriseId: number
  status: HTMLElement
  editor: HTMLElement
  /** The endpoint being edited. */
  editing: number | null
  load(): Promise<void>
}

/** The form that adds an endpoint (endpoint null) or changes one; the page lists again once it is saved. */
export function endpointForm(page: EndpointEditing, endpoint: Endpoint | null): HTMLFormElement {
  return settingsForm({
    endpoint,
    submit: async (controls) => {
      if (endpoint) await saveChanges(page, endpoint, endpointChanges(controls, endpoint))
      else await addEndpoint(page, controls)
      await page.load()
    },
    cancel: () => closeEditor(page),
  })
}

async function saveChanges(page: EndpointEditing, endpoint: Endpoint, body: EndpointChanges): Promise<void> {
  const changed = Object.keys(body).length > 0
  if (changed) {
    const params = { enterpriseId: page.enterpriseId, endpointId: endpoint.endpointId }
    await api('updateEndpoint', { params, body })
  }
  closeEditor(page)
  page.status.textContent = `Endpoint ${endpoint.endpointId} ${changed ? 'saved' : 'is unchanged'}.`
}

async function addEndpoint(page: EndpointEditing, controls: EndpointControls): Promise<void> {
  const body = newEndpoint(controls)
  const added = await api('addEndpoint', { params: { enterpriseId: page.enterpriseId }, body })
  resetControls(controls)
  page.status.textContent = `Endpoint ${added.endpointId} added: it gets ${added.eventTypes.join(', ')} at ${added.url}.`
}

export function openEditor(page: EndpointEditing, e: Endpoint): void {
  page.editing = e.endpointId
  const title = h('h2', { id: 'endpoint-editor-heading', tabindex: '-1' }, `Edit endpoint ${e.endpointId}`)
  page.editor.replaceChildren(title, endpointForm(page, e))
  page.editor.hidden = false
  page.editor.querySelector('input')?.focus()
}

export function closeEditor(page: EndpointEditing): void {
  const id = page.editing
  page.editing = null
  page.editor.hidden = true
  page.editor.replaceChildren()
  document.getElementById(`endpoint-${id}-edit`)?.focus()
}
