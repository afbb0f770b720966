import { AsyncLocalStorage } from 'node:async_hooks'
import type { Database, Queryable } from '../storage/database.js'
import { appendToChain } from './audit-chain.js'
import { type Actor, type AuditTarget, targetOf } from './audit-entry.js'

/**
 * A change in progress, as the trail will record it: who, from where, which operation, on what. Held for
 * the request that makes it; each transaction the request commits appends its row to the trail in that
 * same transaction.
 */
export interface PendingAudit {
  actor: Actor
  operation: string
  address: string | null
  userAgent: string | null
  target: AuditTarget
  before: Record<string, unknown> | null
  after: Record<string, unknown> | null
  /** Rows appended so far. */
  appended: number
  /** Set when the request has answered: a transaction it left running is no longer its change. */
  closed: boolean
}

const pending = new AsyncLocalStorage<PendingAudit>()

/** Runs a request's handling with its change pending: its transactions append to the trail. */
export function runAudited<T>(change: PendingAudit, fn: () => T): T {
  return pending.run(change, fn)
}

/**
 * What the code making a change knows that the request does not: a row's values before the change, its
 * ids (an enterprise the delivery belongs to). Merged into the pending change, if any.
 */
export function noteAudit(note: { target?: AuditTarget; before?: Record<string, unknown> | null }): void {
  const change = pending.getStore()
  if (!change || change.closed) return
  if (note.target) change.target = { ...change.target, ...note.target }
  if (note.before !== undefined) change.before = note.before
}

/**
 * Runs bookkeeping that is no part of the change outside it: its writes commit on their own and append
 * no row (an upload's claim, committed before the first byte is stored so that the orphan sweep spares
 * the file, and let go should the change not happen).
 */
export function outsideChange<T>(fn: () => T): T {
  return pending.exit(fn)
}

const WRITE = /^\s*(INSERT|UPDATE|DELETE|MERGE|TRUNCATE)\b/i

/**
 * The database as the admin routes see it: a transaction run for a change appends the change's row to the
 * trail before it commits, its target completed with the ids the transaction answered (a created row's).
 * A change writing outside a transaction would escape its row, so that is refused as a programming error.
 */
export function auditedDatabase(db: Database, clock: () => number): Database {
  return {
    kind: db.kind,
    query(sql, params) {
      const change = pending.getStore()
      if (change && !change.closed && WRITE.test(sql)) {
        throw new Error(`an audited change must write in a transaction: ${change.operation}`)
      }
      return db.query(sql, params)
    },
    transaction(fn) {
      const change = pending.getStore()
      if (!change || change.closed) return db.transaction(fn)
      return db.transaction(async (tx) => {
        const result = await fn(tx)
        await appendChange(tx, change, targetOf(result), clock)
        return result
      })
    },
    session: (fn) => db.session(fn),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  }
}

/** Appends the pending change's row in the caller's transaction. */
export async function appendChange(
  tx: Queryable,
  change: PendingAudit,
  created: AuditTarget,
  clock: () => number,
): Promise<void> {
  await appendToChain(tx, {
    at: new Date(clock()).toISOString(),
    actor: change.actor,
    operation: change.operation,
    target: { ...change.target, ...created },
    before: change.before,
    after: change.after,
    address: change.address,
    userAgent: change.userAgent,
    outcome: 'ok',
  })
  change.appended++
}
