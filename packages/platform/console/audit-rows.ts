/** The audit trail's rows as the audit page shows them: who did what to what, when, and its outcome. */
import type { AdminAnswer } from './admin-client.js'
import { badge, cell, h, stamp, table } from './dom.js'

export type AuditRow = AdminAnswer<'listAudit'>['rows'][number]

const COLUMNS = ['Time', 'Actor', 'Operation', 'Target', 'Outcome', 'Change'] as const
/** A value longer than this is cut in the table; the whole change is in its tooltip. */
const VALUE_CHARS = 60

const TARGET_NAMES: Record<string, string> = {
  enterpriseId: 'enterprise',
  audioId: 'recording',
  endpointId: 'endpoint',
  deliveryId: 'delivery',
  keyId: 'key',
  operatorId: 'operator',
}

export function auditTable(rows: readonly AuditRow[]): HTMLTableElement {
  return table(
    'The audit trail, newest first',
    COLUMNS,
    rows.map((row) =>
      h(
        'tr',
        { id: `audit-${row.seq}`, class: row.outcome === 'refused' ? 'refused' : undefined },
        cell(COLUMNS[0], stamp(row.at)),
        cell(COLUMNS[1], actorCell(row.actor)),
        cell(COLUMNS[2], h('span', { class: 'mono' }, row.operation)),
        cell(COLUMNS[3], targetText(row.target)),
        cell(COLUMNS[4], badge(row.outcome === 'ok' ? 'ok' : 'refused')),
        cell(COLUMNS[5], changeCell(row.before, row.after)),
      ),
    ),
  )
}

/** The actor's name, and its id as a link to its rows. */
function actorCell(actor: AuditRow['actor']): HTMLElement[] {
  return [
    h('span', {}, actor.name),
    h(
      'a',
      {
        href: `#/audit?${new URLSearchParams({ actor: actor.id })}`,
        class: 'block mono small',
        'aria-label': `Rows of ${actor.id}`,
      },
      actor.id,
    ),
  ]
}

function targetText(target: AuditRow['target']): string {
  const parts = Object.entries(target).map(([name, id]) => `${TARGET_NAMES[name] ?? name} ${id}`)
  return parts.length === 0 ? '—' : parts.join(' · ')
}

/** The change compactly, field=value (the trail keeps only the names of some fields: name=…). */
function changeCell(before: AuditRow['before'], after: AuditRow['after']): HTMLElement | string {
  if (before === null && after === null) return '—'
  const whole = JSON.stringify({ ...(before && { before }), ...(after && { after }) })
  return h(
    'code',
    { class: 'change', title: whole },
    before && h('span', { class: 'block' }, 'before: ', compact(before)),
    after && h('span', { class: 'block' }, before ? 'after: ' : '', compact(after)),
  )
}

function compact(fields: Record<string, unknown>): string {
  const entries = Object.entries(fields)
  if (entries.length === 0) return '{}'
  return entries
    .map(([name, value]) => {
      const text = typeof value === 'string' ? value : JSON.stringify(value)
      return `${name}=${text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS)}…` : text}`
    })
    .join(', ')
}
