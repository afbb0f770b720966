/**
 * Replaying every failed or unconfirmed delivery created since a time (a manage session's): the states
 * chosen, the time read as UTC like every time the portal shows, confirmed before it runs.
 */
import {
  alertBox,
  confirmDialog,
  count,
  field,
  h,
  showError,
  stampText,
  utcInputInstant,
  utcInputValue,
} from './dom.js'
import { REPLAY_STATES } from './page-constants.js'
import { call } from './portal-api.js'

/** A day back: the default start of a replay, to the second. */
const DAY_MS = 24 * 60 * 60 * 1000

/** The form; `replayed` is told how many deliveries were made pending again. */
export function replaySinceForm(
  since: string | null,
  replayed: (message: string) => Promise<void>,
): HTMLFormElement {
  const alert = alertBox()
  const sinceInput = h('input', {
    id: 'replay-since',
    type: 'datetime-local',
    step: '1',
    required: true,
    value: utcInputValue(since ?? new Date(Date.now() - DAY_MS).toISOString()),
  })
  const boxes = REPLAY_STATES.map((state) =>
    h('input', {
      id: `replay-state-${state}`,
      type: 'checkbox',
      name: 'states',
      value: state,
      checked: true,
    }),
  )
  const button = h('button', { type: 'submit', class: 'primary' }, 'Replay')
  const submit = async (event: Event) => {
    event.preventDefault()
    alert.replaceChildren()
    const states = REPLAY_STATES.filter((_, i) => boxes[i]?.checked)
    if (states.length === 0 || !sinceInput.value) {
      alert.textContent = 'Choose at least one state, and the time to replay from.'
      return
    }
    const instant = utcInputInstant(sinceInput.value)
    const confirmed = await confirmDialog({
      title: 'Replay these deliveries?',
      message: `Every ${states.join(' or ')} delivery created since ${stampText(instant)} is pushed again, with the same eventId.`,
      confirmLabel: 'Replay',
    })
    if (!confirmed) return
    button.disabled = true
    try {
      const answer = await call('replayDeliveries', { states: [...states], since: instant })
      await replayed(
        `${count(answer.replayed, 'delivery', 'deliveries')} replayed since ${stampText(instant)}.`,
      )
    } catch (error) {
      showError(alert, error)
    } finally {
      button.disabled = false
    }
  }
  return h(
    'form',
    {
      class: 'card replay-since',
      'aria-label': 'Replay failed or unconfirmed deliveries since a time',
      onsubmit: submit,
    },
    h('h2', {}, 'Replay failed or unconfirmed since a time'),
    h(
      'div',
      { class: 'fields' },
      field('replay-since', 'Created since (UTC)', sinceInput),
      h(
        'fieldset',
        { class: 'event-type-choice' },
        h('legend', {}, 'States'),
        boxes.map((box) => h('label', { class: 'check', for: box.id }, box, box.value)),
      ),
    ),
    alert,
    h('div', { class: 'actions' }, button),
  )
}
