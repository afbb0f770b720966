/** The endpoints page's form: adding an endpoint or changing one, each refusal shown beside its field. */
import { api, Refusal } from './admin-api.js'
import type { Endpoint, EndpointChanges, NewEndpoint } from './admin-client.js'
import { ENDPOINT_LIMITS, EVENT_TYPES, INVALID_PARAMETER } from './console-constants.js'
import { type Attributes, alertBox, field, h, showError } from './dom.js'

/** What of the endpoints page the form reads and changes. */
export interface EndpointEditing {
  enterpriseId: number
  status: HTMLElement
  editor: HTMLElement
  /** The endpoint being edited. */
  editing: number | null
  load(): Promise<void>
}

interface Controls {
  url: HTMLInputElement
  eventTypes: HTMLInputElement[]
  description: HTMLInputElement
  maxPerSecond: HTMLInputElement
}

/** Where a refusal of a field is shown, what is marked invalid, and what gets the focus. */
interface FieldAlert {
  alert: HTMLElement
  control: HTMLElement
  focus?: HTMLElement
}
type FieldAlerts = Record<string, FieldAlert>

function formControls(prefix: string, endpoint: Endpoint | null): Controls {
  const input = (name: string, attributes: Attributes) =>
    h('input', { id: `${prefix}-${name}`, name, spellcheck: 'false', ...attributes })
  return {
    url: input('url', {
      type: 'text',
      inputmode: 'url',
      required: true,
      maxlength: String(ENDPOINT_LIMITS.urlLength),
      placeholder: 'https://partner.example/earshot',
      value: endpoint?.url ?? '',
    }),
    eventTypes: EVENT_TYPES.map((type) =>
      h('input', {
        id: `${prefix}-${type.replace('recording.', '')}`,
        type: 'checkbox',
        name: 'eventTypes',
        value: type,
        checked: endpoint ? endpoint.eventTypes.includes(type) : true,
      }),
    ),
    description: input('description', {
      type: 'text',
      maxlength: String(ENDPOINT_LIMITS.descriptionLength),
      value: endpoint?.description ?? '',
    }),
    maxPerSecond: input('rate', {
      type: 'number',
      min: '1',
      max: String(ENDPOINT_LIMITS.perSecond),
      step: '1',
      inputmode: 'numeric',
      value: endpoint?.maxPerSecond ?? '',
    }),
  }
}

/**
 * The form that adds an endpoint (endpoint null) or changes one: URL, event types (all four checked for a
 * new one), description and rate. A refusal of a field is shown beside that field.
 */
export function endpointForm(page: EndpointEditing, endpoint: Endpoint | null): HTMLFormElement {
  const prefix = endpoint ? 'edit-endpoint' : 'new-endpoint'
  const title = endpoint ? `Edit endpoint ${endpoint.endpointId}` : 'Add an endpoint'
  const controls = formControls(prefix, endpoint)
  const errors: FieldAlerts = {}
  const checked = (id: string, text: string, control: HTMLInputElement, hint?: string) => {
    const alert = alertBox()
    errors[control.name] = { alert, control }
    alert.id = `${id}-error`
    control.setAttribute('aria-describedby', [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(' '))
    return h('div', {}, field(id, text, control, hint), alert)
  }
  const formAlert = alertBox()
  const submit = h('button', { type: 'submit', class: 'primary' }, endpoint ? 'Save' : 'Add')
  const form = h(
    'form',
    {
      class: endpoint ? 'endpoint-form' : 'card endpoint-form',
      'aria-label': title,
      onsubmit: async (event) => {
        event.preventDefault()
        submit.disabled = true
        try {
          await submitEndpoint(page, endpoint, controls, { errors, formAlert })
        } finally {
          submit.disabled = false
          if (document.activeElement === document.body && submit.isConnected) submit.focus()
        }
      },
    },
    !endpoint && h('h2', {}, title),
    h(
      'div',
      { class: 'fields' },
      checked(`${prefix}-url`, 'URL', controls.url),
      checked(`${prefix}-description`, 'Description (optional)', controls.description),
      checked(
        `${prefix}-rate`,
        'Max per second (optional)',
        controls.maxPerSecond,
        'Deliveries a second at most; empty for no limit.',
      ),
    ),
    eventTypeFieldset(prefix, controls.eventTypes, errors),
    formAlert,
    h(
      'div',
      { class: 'actions' },
      submit,
      endpoint && h('button', { type: 'button', class: 'quiet', onclick: () => closeEditor(page) }, 'Cancel'),
    ),
  )
  return form
}

function eventTypeFieldset(
  prefix: string,
  boxes: HTMLInputElement[],
  errors: FieldAlerts,
): HTMLFieldSetElement {
  const alert = alertBox()
  alert.id = `${prefix}-event-types-error`
  const fieldset = h(
    'fieldset',
    { class: 'event-type-choice', 'aria-describedby': alert.id },
    h('legend', {}, 'Event types'),
    boxes.map((box) =>
      h('label', { class: 'check', for: box.id }, box, h('span', { class: 'mono' }, box.value)),
    ),
    alert,
  )
  errors.eventTypes = { alert, control: fieldset, focus: boxes[0] }
  return fieldset
}

/** What the form says, as the API takes it. */
function formValues(controls: Controls) {
  const rateText = controls.maxPerSecond.value.trim()
  return {
    url: controls.url.value.trim(),
    // The boxes are the event types', in their order.
    eventTypes: EVENT_TYPES.filter((_, i) => controls.eventTypes[i]?.checked),
    description: controls.description.value,
    maxPerSecond: rateText === '' ? null : Number(rateText),
  }
}

/** A new endpoint: what the form says, an empty description or rate left out. */
function newEndpoint(controls: Controls): NewEndpoint {
  const { description, maxPerSecond, ...body } = formValues(controls)
  return { ...body, ...(description && { description }), ...(maxPerSecond !== null && { maxPerSecond }) }
}

/** A change: the fields of the form that differ from the endpoint. */
function endpointChanges(controls: Controls, endpoint: Endpoint): EndpointChanges {
  const values = formValues(controls)
  // The checkboxes are in the API's order, as the endpoint's event types are.
  const same = (name: keyof typeof values) => JSON.stringify(values[name]) === JSON.stringify(endpoint[name])
  return Object.fromEntries(Object.entries(values).filter(([name]) => !same(name as keyof typeof values)))
}

async function submitEndpoint(
  page: EndpointEditing,
  endpoint: Endpoint | null,
  controls: Controls,
  { errors, formAlert }: { errors: FieldAlerts; formAlert: HTMLElement },
): Promise<void> {
  formAlert.replaceChildren()
  for (const { alert, control } of Object.values(errors)) {
    alert.replaceChildren()
    control.removeAttribute('aria-invalid')
  }
  try {
    if (endpoint) await saveChanges(page, endpoint, endpointChanges(controls, endpoint))
    else await addEndpoint(page, controls, newEndpoint(controls))
    await page.load()
  } catch (error) {
    showFieldError(error, errors, formAlert)
  }
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

async function addEndpoint(page: EndpointEditing, controls: Controls, body: NewEndpoint): Promise<void> {
  const added = await api('addEndpoint', { params: { enterpriseId: page.enterpriseId }, body })
  controls.url.value = ''
  controls.description.value = ''
  controls.maxPerSecond.value = ''
  for (const box of controls.eventTypes) box.checked = true
  page.status.textContent = `Endpoint ${added.endpointId} added: it gets ${added.eventTypes.join(', ')} at ${added.url}.`
}

/** A refusal of one field beside it (its message starts with the field's name), any other in the form's alert. */
function showFieldError(error: unknown, errors: FieldAlerts, formAlert: HTMLElement) {
  const name =
    error instanceof Refusal && error.code === INVALID_PARAMETER && /^([A-Za-z]+)\b/.exec(error.msg)?.[1]
  const target = name && errors[name]
  if (!target) return showError(formAlert, error)
  showError(target.alert, error)
  target.control.setAttribute('aria-invalid', 'true')
  ;(target.focus ?? target.control).focus()
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
