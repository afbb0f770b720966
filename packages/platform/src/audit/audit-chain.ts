import { createHash } from 'node:crypto'
import type { Queryable } from '../storage/database.js'
import type { AuditRow } from './audit-entry.js'

/*
 * The audit trail's hash chain: each row's hash covers its fields and the previous row's hash, so a row
 * changed or removed breaks every hash after it. An append locks the chain's head (audit_chain), the last
 * statement of its transaction, so rows chain in commit order and seq has no gap.
 */

export type ChainedFields = Omit<AuditRow, 'seq' | 'hash' | 'prevHash'>

export async function appendToChain(tx: Queryable, given: ChainedFields): Promise<number> {
  const { at, actor, operation, target, before, after, address, userAgent, outcome } = given
  const fields: ChainedFields = { at, actor, operation, target, before, after, address, userAgent, outcome }
  const [head] = await tx.query<{ seq: number; hash: string }>(
    'SELECT head_seq AS seq, head_hash AS hash FROM audit_chain FOR UPDATE',
  )
  if (!head) throw new Error('the audit chain has no head: the migrations did not run')
  const seq = head.seq + 1
  const hash = rowHash({ ...fields, seq, prevHash: head.hash })
  await tx.query(
    `INSERT INTO audit_log (seq, at, actor, operation, target, before, after, address, user_agent, outcome, prev_hash, hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      seq,
      fields.at,
      JSON.stringify(fields.actor),
      fields.operation,
      JSON.stringify(fields.target),
      fields.before === null ? null : JSON.stringify(fields.before),
      fields.after === null ? null : JSON.stringify(fields.after),
      fields.address,
      fields.userAgent,
      fields.outcome,
      head.hash,
      hash,
    ],
  )
  await tx.query('UPDATE audit_chain SET head_seq = $1, head_hash = $2', [seq, hash])
  return seq
}

/** The hash of a row: SHA-256 of its fields as canonical JSON (keys sorted), the previous hash included. */
export function rowHash(row: Omit<AuditRow, 'hash'>): string {
  return createHash('sha256').update(canonicalJson(row)).digest('hex')
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(',')}}`
  }
  return JSON.stringify(value)
}
