import type { Database, Queryable } from '../storage/database.js'
import { appendToChain, type ChainedFields, rowHash } from './audit-chain.js'
import type { AuditRow } from './audit-entry.js'

/** Appends one row in a transaction of its own: a refusal, a sign-in, the platform's own action. */
export async function appendAudit(db: Database, fields: ChainedFields): Promise<void> {
  await db.transaction((tx) => appendToChain(tx, fields))
}

export interface AuditFilter {
  actorId?: string
  enterpriseId?: number
  since?: string
  /** Rows before this seq (the previous page's last). */
  before?: number
  limit: number
  /** Only rows about these enterprises (a principal limited to them); null: every row. */
  enterprises: readonly number[] | null
}

const COLUMNS = `seq, at, actor, operation, target, before, after, address, user_agent AS "userAgent", outcome,
  prev_hash AS "prevHash", hash`

/** Rows newest first, filtered, one page. */
export async function listAudit(db: Queryable, filter: AuditFilter): Promise<AuditRow[]> {
  const where: string[] = []
  const params: unknown[] = []
  const add = (clause: (n: string) => string, value: unknown) => {
    params.push(value)
    where.push(clause(`$${params.length}`))
  }
  if (filter.actorId !== undefined) add((n) => `actor->>'id' = ${n}`, filter.actorId)
  if (filter.enterpriseId !== undefined)
    add((n) => `target->>'enterpriseId' = ${n}`, String(filter.enterpriseId))
  if (filter.since !== undefined) add((n) => `at >= ${n}`, filter.since)
  if (filter.before !== undefined) add((n) => `seq < ${n}`, filter.before)
  if (filter.enterprises !== null) {
    add((n) => `(target->>'enterpriseId') = ANY (${n}::text[])`, filter.enterprises.map(String))
  }
  params.push(filter.limit)
  const rows = await db.query<AuditRow>(
    `SELECT ${COLUMNS} FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY seq DESC LIMIT $${params.length}`,
    params,
  )
  return rows.map(asRow)
}

/** Every row from the oldest kept, a page at a time (an export). */
export async function* everyAuditRow(db: Queryable, pageSize = 1000): AsyncGenerator<AuditRow> {
  let after = 0
  for (;;) {
    const rows = await db.query<AuditRow>(
      `SELECT ${COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2`,
      [after, pageSize],
    )
    for (const row of rows) yield asRow(row)
    if (rows.length < pageSize) return
    after = rows[rows.length - 1]?.seq ?? after
  }
}

export interface Verification {
  ok: boolean
  checked: number
  /** The first row whose hash or link does not hold, or the seq where a row is missing. */
  firstBad?: number
}

/**
 * Walks the chain from the retention anchor: every row's hash must be its fields' hash, link to the row
 * before, and the seqs follow without a gap up to the head.
 */
export async function verifyAudit(db: Database): Promise<Verification> {
  const [chain] = await db.query<{
    headSeq: number
    headHash: string
    anchorSeq: number
    anchorHash: string
  }>(
    'SELECT head_seq AS "headSeq", head_hash AS "headHash", anchor_seq AS "anchorSeq", anchor_hash AS "anchorHash" FROM audit_chain',
  )
  if (!chain) return { ok: false, checked: 0, firstBad: 0 }
  let expectedSeq = chain.anchorSeq + 1
  let prevHash = chain.anchorHash
  let checked = 0
  for await (const row of everyAuditRow(db)) {
    const { hash, ...fields } = row
    if (row.seq !== expectedSeq || row.prevHash !== prevHash || rowHash(fields) !== hash) {
      return { ok: false, checked, firstBad: Math.min(row.seq, expectedSeq) }
    }
    checked++
    expectedSeq++
    prevHash = hash
  }
  if (expectedSeq - 1 !== chain.headSeq || prevHash !== chain.headHash) {
    return { ok: false, checked, firstBad: expectedSeq }
  }
  return { ok: true, checked }
}

/**
 * Removes the rows older than the cutoff, leaving their last hash as the anchor `verify` starts from. The
 * only deletion the append-only trigger lets through.
 */
export async function pruneAudit(db: Database, cutoff: string): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT set_config('earshot.audit_prune', 'on', true)`)
    await tx.query('SELECT 1 FROM audit_chain FOR UPDATE')
    const [last] = await tx.query<{ seq: number; hash: string }>(
      'SELECT seq, hash FROM audit_log WHERE at < $1 ORDER BY seq DESC LIMIT 1',
      [cutoff],
    )
    if (!last) return 0
    const deleted = await tx.query('DELETE FROM audit_log WHERE seq <= $1 RETURNING seq', [last.seq])
    await tx.query('UPDATE audit_chain SET anchor_seq = $1, anchor_hash = $2', [last.seq, last.hash])
    await tx.query(`SELECT set_config('earshot.audit_prune', 'off', true)`)
    return deleted.length
  })
}

function asRow(row: AuditRow): AuditRow {
  return { ...row, at: new Date(row.at).toISOString() }
}

/** The retention job: prunes rows older than the retention, and records that it did, as the platform. */
export async function pruneAuditTrail(
  db: Database,
  clock: () => number,
  retentionDays: number,
): Promise<number> {
  const now = clock()
  const pruned = await pruneAudit(db, new Date(now - retentionDays * 86_400_000).toISOString())
  if (pruned > 0) {
    await appendAudit(db, {
      at: new Date(now).toISOString(),
      actor: PLATFORM_ACTOR,
      operation: 'audit.prune',
      target: {},
      before: null,
      after: { rows: pruned },
      address: null,
      userAgent: null,
      outcome: 'ok',
    })
  }
  return pruned
}

/** The platform acting on its own (pruning, retention), as the trail names it. */
export const PLATFORM_ACTOR = { kind: 'platform', id: 'platform', name: 'Earshot' } as const
