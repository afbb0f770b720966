import type { Database } from '../storage/database.js'
import type { Actor } from './audit-entry.js'
import { appendAudit } from './audit-trail.js'
import { type PendingAudit, runAudited } from './audited-changes.js'

/** A change made outside the admin listener (a partner's), as the trail records it. */
export type CallerChange = Omit<PendingAudit, 'appended' | 'closed' | 'actor'> & { actor: Actor }

/**
 * Runs one change with its row pending, as the admin listener runs its routes: its first write (through an
 * auditedDatabase) appends the row in that transaction; a change that wrote nothing (a receiver check) gets
 * its row once it has succeeded. A refused change leaves no row.
 */
export async function auditedCall<T>(
  db: Database,
  clock: () => number,
  change: CallerChange,
  fn: () => Promise<T>,
): Promise<T> {
  const pending: PendingAudit = { ...change, appended: 0, closed: false }
  try {
    const result = await runAudited(pending, fn)
    pending.closed = true
    if (pending.appended === 0) {
      const { appended: _appended, closed: _closed, ...fields } = pending
      await appendAudit(db, { ...fields, at: new Date(clock()).toISOString(), outcome: 'ok' })
    }
    return result
  } finally {
    pending.closed = true
  }
}
