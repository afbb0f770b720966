import { type Queryable, queryOnGenericPlan } from '../storage/database.js'
import { checkQueueSpec, claimOf, type QueueStatements, queueStatements, refParams } from './queue-sql.js'
import type {
  AttemptInput,
  Claim,
  ClaimOptions,
  ClaimRef,
  JobId,
  JobQueue,
  Next,
  QueueSpec,
  Settlement,
} from './queue-types.js'
import { IllegalTransitionError, type QueueMachine, transitionGuardSql } from './state-machine.js'

export type {
  AttemptColumn,
  AttemptInput,
  AttemptRecord,
  Claim,
  ClaimOptions,
  ClaimRef,
  Fence,
  JobId,
  JobQueue,
  Next,
  QueueSpec,
  Settlement,
} from './queue-types.js'

/** perGroup when there is none (an int4 parameter). */
const NO_GROUP_LIMIT = 2 ** 31 - 1

/** Jobs the spec's repair looks at per run at most, and how often it runs at most: it is a backstop. */
const REPAIR_LIMIT = 100
const REPAIR_EVERY_MS = 1000

/** Errors are cut to this many characters before they are stored. */
export const MAX_ERROR_LENGTH = 500

/** Why a claimed job cannot move to `next`, or undefined when it can. */
export function nextProblem<S extends string>(machine: QueueMachine<S>, next: Next<S>): string | undefined {
  if (!machine.allows(machine.claimed, next.state)) return `no transition ${machine.claimed} → ${next.state}`
  if (machine.waiting.includes(next.state) && next.delaySeconds === undefined) {
    return `moving a job to the waiting state ${next.state} needs delaySeconds`
  }
  return undefined
}

/** A queue over its table, its statements written once from its spec (queue-sql.ts). */
export function defineQueue<S extends string, Id extends JobId, J>(
  spec: QueueSpec<S, Id, J>,
): JobQueue<S, Id, J> {
  checkQueueSpec(spec)
  return new SqlJobQueue(spec)
}

class SqlJobQueue<S extends string, Id extends JobId, J> implements JobQueue<S, Id, J> {
  private readonly sql: QueueStatements
  private repairedAt = Number.NEGATIVE_INFINITY

  constructor(readonly spec: QueueSpec<S, Id, J>) {
    this.sql = queueStatements(spec)
  }

  async claim(db: Queryable, options: ClaimOptions<Id>): Promise<Claim<Id, J>[]> {
    const byIds = options.ids !== undefined && options.ids.length > 0
    const leavesOut = (options.excludeGroups?.length ?? 0) > 0
    const held = options.heldByGroup ?? new Map<string, number>()
    const others = !byIds && leavesOut
    const sql = byIds ? this.sql.claimByIds : others ? this.sql.claimOthers : this.sql.claimByDue
    const params = [
      options.claimant,
      options.limit,
      options.excludeGroups ?? [],
      options.leaseSeconds,
      Math.min(options.perGroup ?? NO_GROUP_LIMIT, NO_GROUP_LIMIT),
      [...held.keys()],
      [...held.values()],
      ...(byIds ? [options.ids] : []),
    ]
    // The group-by-group claim (queues with paused groups) reads each group up to its limit; its generic
    // plan's guess at that limit looks worse than the plans for the values given, so it was planned at every
    // call, for about ten times what running it costs (the generic plan runs as fast). The claim in due order
    // keeps a generic plan by itself.
    const rows =
      others && this.spec.pausedGroups !== undefined
        ? await queryOnGenericPlan(db, sql, params)
        : await db.query<Record<string, unknown>>(sql, params)
    return rows.map((row) => claimOf(this.spec, options.claimant, row))
  }

  async renew(db: Queryable, claims: readonly ClaimRef<Id>[], leaseSeconds: number): Promise<number> {
    if (claims.length === 0) return 0
    const rows = await db.query(this.sql.renew, [...refParams(claims), leaseSeconds])
    return rows.length
  }

  async settle(
    db: Queryable,
    settlements: readonly Settlement<S, Id>[],
  ): Promise<{ moved: number; stale: number }> {
    if (settlements.length === 0) return { moved: 0, stale: 0 }
    for (const settlement of settlements) this.checkNext(settlement.next)
    const column = <T>(pick: (s: Settlement<S, Id>) => T) => settlements.map(pick)
    const [row] = await db.query<{ moved: number; stale: number }>(this.sql.settle, [
      ...refParams(settlements),
      column((s) => s.next.state),
      column((s) => s.next.delaySeconds ?? 0),
      column((s) => s.attempt.outcome),
      column((s) => s.attempt.error?.slice(0, MAX_ERROR_LENGTH) ?? null),
      column((s) => s.attempt.startedAt),
      column((s) => Math.round(s.attempt.durationMs)),
      ...(this.spec.attempts.columns ?? []).map((c) => column((s) => s.attempt.columns?.[c.name] ?? null)),
    ])
    return { moved: row?.moved ?? 0, stale: row?.stale ?? 0 }
  }

  async complete(db: Queryable, claim: ClaimRef<Id>, next: Next<S>, attempt: AttemptInput): Promise<boolean> {
    const outcome = attempt.outcome ?? 'succeeded'
    const { moved } = await this.settle(db, [{ ...claim, next, attempt: { ...attempt, outcome } }])
    return moved === 1
  }

  async fail(db: Queryable, claim: ClaimRef<Id>, next: Next<S>, attempt: AttemptInput): Promise<boolean> {
    const outcome = attempt.outcome ?? 'failed'
    const { moved } = await this.settle(db, [{ ...claim, next, attempt: { ...attempt, outcome } }])
    return moved === 1
  }

  async release(db: Queryable, claims: readonly ClaimRef<Id>[]): Promise<number> {
    if (claims.length === 0) return 0
    const [row] = await db.query<{ released: number }>(this.sql.release, refParams(claims))
    return row?.released ?? 0
  }

  async sweep(db: Queryable, limit: number): Promise<{ moved: number; nextDueSeconds: number | undefined }> {
    const [row] = await db.query<{ moved: number; seconds: number | null }>(this.sql.sweep(limit))
    let repaired = 0
    if (performance.now() - this.repairedAt >= REPAIR_EVERY_MS) {
      this.repairedAt = performance.now()
      repaired = await this.repair(db)
    }
    return {
      moved: (row?.moved ?? 0) + repaired,
      nextDueSeconds: repaired > 0 ? 0 : (row?.seconds ?? undefined),
    }
  }

  async repair(db: Queryable): Promise<number> {
    if (this.spec.repair === undefined) return 0
    const [row] = await db.query<{ moved: number }>(this.spec.repair, [REPAIR_LIMIT])
    return row?.moved ?? 0
  }

  async resume(db: Queryable, groups: readonly string[], limit: number): Promise<number> {
    if (this.spec.machine.held === undefined)
      throw new Error('a queue without a held state holds nothing to resume')
    if (groups.length === 0) return 0
    const [row] = await db.query<{ resumed: number }>(this.sql.resume, [groups, limit])
    return row?.resumed ?? 0
  }

  async notify(db: Queryable): Promise<void> {
    await db.query(this.sql.notify)
  }

  guardSql(): string[] {
    return transitionGuardSql(this.spec.machine, this.spec.table)
  }

  private checkNext(next: Next<S>): void {
    const { machine } = this.spec
    if (!machine.allows(machine.claimed, next.state))
      throw new IllegalTransitionError(machine.claimed, next.state)
    const problem = nextProblem(machine, next)
    if (problem !== undefined) throw new Error(problem)
  }
}
