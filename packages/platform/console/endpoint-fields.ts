/**
 * The form of an endpoint's settings (URL, event types, description, rate), each refusal shown beside the
 * field it names: the console's endpoints page and the partner portal's both draw it, each saving with its
 * own API. It imports nothing a browser would fetch but the DOM helpers and the API's names.
 */
import type { Endpoint, EndpointChanges, NewEndpoint } from './admin-client.js'
import { ENDPOINT_LIMITS, EVENT_TYPES, INVALID_PARAMETER } from './console-constants.js'
import { type Attributes, alertBox, field, h, isRefusal, showError } from './dom.js'

/** What of an endpoint the form shows and changes. */
export type EndpointSettings = Pick<
  Endpoint,
  'endpointId' | 'url' | 'eventTypes' | 'description' | 'maxPerSecond'
>

export interface EndpointControls {
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

export interface EndpointFormOptions {
  /** The endpoint changed, or null for a new one. */
  endpoint: EndpointSettings | null
  /** Adds or saves what the controls say; a refusal it throws is shown beside the field it names. */
  submit(controls: EndpointControls): Promise<void>
  /** Closes the form of an endpoint changed (its Cancel button). */
  cancel(): void
}

function formControls(prefix: string, endpoint: EndpointSettings | null): EndpointControls {
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
export function endpointForm({ endpoint, submit, cancel }: EndpointFormOptions): HTMLFormElement {
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
  const button = h('button', { type: 'submit', class: 'primary' }, endpoint ? 'Save' : 'Add')
  return h(
    'form',
    {
      class: endpoint ? 'endpoint-form' : 'card endpoint-form',
      'aria-label': title,
      onsubmit: async (event) => {
        event.preventDefault()
        button.disabled = true
        try {
          clearErrors(errors, formAlert)
          await submit(controls)
        } catch (error) {
          showFieldError(error, errors, formAlert)
        } finally {
          button.disabled = false
          if (document.activeElement === document.body && button.isConnected) button.focus()
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
      button,
      endpoint && h('button', { type: 'button', class: 'quiet', onclick: cancel }, 'Cancel'),
    ),
  )
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
function formValues(controls: EndpointControls) {
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
export function newEndpoint(controls: EndpointControls): NewEndpoint {
  const { description, maxPerSecond, ...body } = formValues(controls)
  return { ...body, ...(description && { description }), ...(maxPerSecond !== null && { maxPerSecond }) }
}

/** A change: the fields of the form that differ from the endpoint. */
export function endpointChanges(controls: EndpointControls, endpoint: EndpointSettings): EndpointChanges {
  const values = formValues(controls)
  // The checkboxes are in the API's order, as the endpoint's event types are.
  const same = (name: keyof typeof values) => JSON.stringify(values[name]) === JSON.stringify(endpoint[name])
  return Object.fromEntries(Object.entries(values).filter(([name]) => !same(name as keyof typeof values)))
}

/** Empties the form of a new endpoint once it was added (every event type checked again). */
export function resetControls(controls: EndpointControls): void {
  controls.url.value = ''
  controls.description.value = ''
  controls.maxPerSecond.value = ''
  for (const box of controls.eventTypes) box.checked = true
}

function clearErrors(errors: FieldAlerts, formAlert: HTMLElement): void {
  formAlert.replaceChildren()
  for (const { alert, control } of Object.values(errors)) {
    alert.replaceChildren()
    control.removeAttribute('aria-invalid')
  }
}

/** A refusal of one field beside it (its message starts with the field's name), any other in the form's alert. */
function showFieldError(error: unknown, errors: FieldAlerts, formAlert: HTMLElement) {
  const name = isRefusal(error) && error.code === INVALID_PARAMETER && /^([A-Za-z]+)\b/.exec(error.msg)?.[1]
  const target = name && errors[name]
  if (!target) return showError(formAlert, error)
  showError(target.alert, error)
  target.control.setAttribute('aria-invalid', 'true')
  ;(target.focus ?? target.control).focus()
}
