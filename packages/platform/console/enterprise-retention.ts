/**
 * An enterprise's retention policy on the enterprises page: its recordings erased this many days after they
 * were recorded (the platform's own erasure runs, listed on the erasures page); 0 or empty removes it.
 */
import { api } from './admin-api.js'
import type { Enterprise } from './admin-client.js'
import { alertBox, count, h, label, showError } from './dom.js'
import { may } from './session.js'

/** Where the enterprises page says what a change did, and lists again. */
export interface RetentionTarget {
  status: HTMLElement
  load(): Promise<void>
}

/** The policy in words, for the summary and the status. */
export function retentionText(days: number | null): string {
  return days === null ? 'none' : count(days, 'day')
}

/** The enterprise's policy, and (with enterprises.write) a field to set, change or clear it in place. */
export function retentionCell(target: RetentionTarget, e: Enterprise): HTMLElement {
  const shown = h('span', { id: `retention-${e.enterpriseId}` }, retentionText(e.retentionDays))
  if (!may('enterprises.write') || e.disabled) return shown
  const inputId = `retention-days-${e.enterpriseId}`
  const input = h('input', {
    id: inputId,
    type: 'number',
    min: '0',
    max: '36500',
    step: '1',
    inputmode: 'numeric',
    value: e.retentionDays ?? '',
    placeholder: 'none',
    'aria-describedby': `${inputId}-hint`,
  })
  const formAlert = alertBox()
  const save = async (event: Event) => {
    event.preventDefault()
    formAlert.replaceChildren()
    try {
      const retentionDays = input.value.trim() === '' ? 0 : Number(input.value)
      const updated = await api('updateEnterprise', {
        params: { enterpriseId: e.enterpriseId },
        body: { retentionDays },
      })
      target.status.textContent =
        updated.retentionDays === null
          ? `Enterprise ${e.enterpriseId} has no retention policy: its recordings are kept until deleted.`
          : `Enterprise ${e.enterpriseId} erases its recordings ${retentionText(updated.retentionDays)} after they were recorded.`
      await target.load()
    } catch (error) {
      showError(formAlert, error)
      input.focus()
    }
  }
  return h(
    'details',
    {},
    h('summary', { 'aria-label': `Retention of enterprise ${e.enterpriseId}` }, shown),
    h(
      'form',
      { class: 'inline-form', onsubmit: save },
      label(inputId, `Retention days of enterprise ${e.enterpriseId}`),
      input,
      h(
        'small',
        { id: `${inputId}-hint`, class: 'muted' },
        'Recordings older than this (by their recordedAt) are erased and pushed as deleted to every endpoint. 0 or empty: no policy.',
      ),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save')),
      formAlert,
    ),
  )
}
