/** The endpoints page's form: adding an endpoint or changing one, each refusal shown beside its field. */
import { api, Refusal } from './admin-api.js'
import { alertBox, field, h, showError } from './dom.js'

/** The event types an endpoint may be subscribed to, as the API names and orders them. */
export const EVENT_TYPES = [
  'recording.audio_ready',
  'recording.transcript_ready',
  'recording.deleted',
  'recording.updated',
]
/** The refusal code of an invalid field: its message starts with the field's name. */
const INVALID_PARAMETER = 4001

function formControls(prefix, endpoint) {
  const input = (name, attributes) =>
    h('input', { id: `${prefix}-${name}`, name, spellcheck: 'false', ...attributes })
  return {
    url: input('url', {
      type: 'text',
      inputmode: 'url',
      required: true,
      maxlength: '2048',
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
    description: input('description', { type: 'text', maxlength: '500', value: endpoint?.description ?? '' }),
    maxPerSecond: input('rate', {
      type: 'number',
      min: '1',
      max: '10000',
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
export function endpointForm(page, endpoint) {
  const prefix = endpoint ? 'edit-endpoint' : 'new-endpoint'
  const title = endpoint ? `Edit endpoint ${endpoint.endpointId}` : 'Add an endpoint'
  const controls = formControls(prefix, endpoint)
  const errors = {}
  const checked = (id, text, control, hint) => {
    errors[control.name] = { alert: alertBox(), control }
    errors[control.name].alert.id = `${id}-error`
    control.setAttribute('aria-describedby', [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(' '))
    return h('div', {}, field(id, text, control, hint), errors[control.name].alert)
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

function eventTypeFieldset(prefix, boxes, errors) {
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

/** What the form says, as the API takes it: for a change, only the fields that differ from the endpoint. */
function formBody(controls, endpoint) {
  const rateText = controls.maxPerSecond.value.trim()
  const values = {
    url: controls.url.value.trim(),
    eventTypes: controls.eventTypes.filter((box) => box.checked).map((box) => box.value),
    description: controls.description.value,
    maxPerSecond: rateText === '' ? null : Number(rateText),
  }
  if (!endpoint) {
    const { description, maxPerSecond, ...body } = values
    return { ...body, ...(description && { description }), ...(maxPerSecond !== null && { maxPerSecond }) }
  }
  const same = (name) => JSON.stringify(values[name]) === JSON.stringify(endpoint[name])
  // The checkboxes are in the API's order, as the endpoint's event types are.
  return Object.fromEntries(Object.entries(values).filter(([name]) => !same(name)))
}

async function submitEndpoint(page, endpoint, controls, { errors, formAlert }) {
  formAlert.replaceChildren()
  for (const { alert, control } of Object.values(errors)) {
    alert.replaceChildren()
    control.removeAttribute('aria-invalid')
  }
  const body = formBody(controls, endpoint)
  try {
    if (endpoint) {
      if (Object.keys(body).length > 0) {
        const params = { enterpriseId: page.enterpriseId, endpointId: endpoint.endpointId }
        await api('updateEndpoint', { params, body })
      }
      closeEditor(page)
      page.status.textContent = `Endpoint ${endpoint.endpointId} ${Object.keys(body).length > 0 ? 'saved' : 'is unchanged'}.`
    } else {
      const added = await api('addEndpoint', { params: { enterpriseId: page.enterpriseId }, body })
      controls.url.value = ''
      controls.description.value = ''
      controls.maxPerSecond.value = ''
      for (const box of controls.eventTypes) box.checked = true
      page.status.textContent = `Endpoint ${added.endpointId} added: it gets ${added.eventTypes.join(', ')} at ${added.url}.`
    }
    await page.load()
  } catch (error) {
    showFieldError(error, errors, formAlert)
  }
}

/** A refusal of one field beside it (its message starts with the field's name), any other in the form's alert. */
function showFieldError(error, errors, formAlert) {
  const name =
    error instanceof Refusal && error.code === INVALID_PARAMETER && /^([A-Za-z]+)\b/.exec(error.msg)?.[1]
  const target = name && errors[name]
  if (!target) return showError(formAlert, error)
  showError(target.alert, error)
  target.control.setAttribute('aria-invalid', 'true')
  ;(target.focus ?? target.control).focus()
}

export function openEditor(page, e) {
  page.editing = e.endpointId
  const title = h('h2', { id: 'endpoint-editor-heading', tabindex: '-1' }, `Edit endpoint ${e.endpointId}`)
  page.editor.replaceChildren(title, endpointForm(page, e))
  page.editor.hidden = false
  page.editor.querySelector('input')?.focus()
}

export function closeEditor(page) {
  const id = page.editing
  page.editing = null
  page.editor.hidden = true
  page.editor.replaceChildren()
  document.getElementById(`endpoint-${id}-edit`)?.focus()
}
