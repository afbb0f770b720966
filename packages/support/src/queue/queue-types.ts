/** The generic queue's types: a job's claim and its fence, the queue's spec, an attempt and where it leads. */
import type { Queryable } from '../storage/database.js'
import type { QueueMachine } from './state-machine.js'

export type JobId = number | string

/**
 * Who holds a claim and which claim it is. `claimNo` grows by one with every claim of the job and never
 * goes down, so a fence names one claim for ever: once the job is claimed again, handed back or moved on
 * by anyone else, the old fence matches nothing.
 */
export interface Fence {
  claimant: string
  claimNo: number
}

export interface ClaimRef<Id extends JobId = JobId> {
  id: Id
  fence: Fence
}

export interface Claim<Id extends JobId, J> extends ClaimRef<Id> {
  /** The job's concurrency group (group_key), if it has one. */
  group: string | null
  job: J
}

/** An attempt's own column beyond the queue's, e.g. `{ name: 'http_status', type: 'int' }`. */
export interface AttemptColumn {
  name: string
  /** The SQL type of the column's values, as in `$n::type[]`. */
  type: string
}

/**
 * A queue over an existing jobs table and its attempts table. The jobs table must have, besides the id:
 * `state text`, `due_at timestamptz` (when the queue next acts: attempt it, end the lease, end a wait;
 * NULL in final states), `claim_no integer NOT NULL DEFAULT 0`, `claimed_by text`, `claimed_at
 * timestamptz`, `group_key text` (non-empty; NULL: no group), an index on due_at, and the sweep's
 * partial index on due_at (sweepIndexSql). The attempts
 * table: `attempt_id` (an identity), the id column, `claim_no integer`, `claimed_by text`, `started_at
 * timestamptz`, `duration_ms integer`, `outcome text`, `error text`, `stale boolean`, `next_attempt_at
 * timestamptz`, then `columns`.
 *
 * SQL fragments below see the job row as `j`: as claimed in `claimed`, as it was before the statement in
 * `settle` and `timers`. In `settle`, `r` is the result (r.state is the state asked for, r.outcome the
 * attempt's outcome, r.<column> its columns).
 */
export interface QueueSpec<S extends string, Id extends JobId, J> {
  table: string
  idColumn: string
  idType: Id extends number ? 'int8' : 'text'
  attempts: { table: string; columns?: readonly AttemptColumn[] }
  machine: QueueMachine<S>
  /** NOTIFY channel: sent when jobs become due now, listened to by runners. */
  channel: string
  /** What a claim returns beside the job's id and fence: columns, and joins to other tables. */
  claimed: {
    select: string
    joins?: string
    parse(row: Record<string, unknown>): J
  }
  settle?: {
    /** The state a current claim's result moves the job to; default `r.state`. */
    state?: string
    /** Further assignments, given the SQL of the new state (e.g. a counter, a timestamp). */
    set?: (state: string) => string
  }
  /** Waiting states: the state (SQL) a job moves to once its due_at passes. */
  timers?: readonly { state: S; next: string }[]
  /**
   * A query (SQL) of the group keys whose ready jobs are not claimed for now, e.g. those of a partner
   * endpoint an operator must re-enable. Needs the machine's held state: the sweep moves a paused group's
   * ready jobs there (a batch at a time; claims skip the few not moved yet), so that claims, sweeps and
   * counts of what is due never read through them, and resume() brings them back in due order. The
   * table then needs the indexes groupIndexesSql describes, and its due index dueIndexSql's predicate.
   */
  pausedGroups?: string
  /**
   * pausedGroups as the sweep reads it before holding their ready jobs, with the locks that make a
   * concurrent un-pausing (which locks the same rows FOR UPDATE) either wait for the sweep or be seen by
   * it. Default: pausedGroups.
   */
  pausedGroupsLocked?: string
  /** When a resumed job is due (SQL over `j`, the job's row); default `least(j.due_at, now())`. */
  resumeDue?: string
  /**
   * A statement the sweep runs after its own, re-checking jobs a concurrent statement may have left
   * parked or held: $1 how many to look at; it answers one row, `moved` (how many it moved). It should look
   * only where something could have been left (a batch per sweep), never through the whole table.
   */
  repair?: string
  /**
   * Groups held to a rate: a table with a row per rated group, its key (`key`::text is the group_key),
   * the attempts a second it allows (NULL: no rate) and when its next attempt may start. A claim takes
   * at most a tenth of a second's worth of a rated group's jobs (at least one) whose time has come, and
   * moves that time on by what it took; until then, claims pass the group by and the sweep counts it due
   * then. Every claimant shares the table's row, so the rate holds across processes. The table needs an
   * index on (`key`::text) and one on `nextAt` where `perSecond` IS NOT NULL: without them, every claim
   * reads the whole table.
   */
  rated?: { table: string; key: string; perSecond: string; nextAt: string }
}

export interface ClaimOptions<Id extends JobId> {
  claimant: string
  limit: number
  leaseSeconds: number
  /** Groups the claimant cannot take more work for now. */
  excludeGroups?: readonly string[]
  /**
   * Jobs of one group taken at most, less those the claimant holds already (`heldByGroup`), so that one
   * group's backlog cannot fill a claim that other groups' jobs are due for. Default: no limit.
   */
  perGroup?: number
  heldByGroup?: ReadonlyMap<string, number>
  /** Jobs to claim first, even before they are due (still only from the ready state). */
  ids?: readonly Id[]
}

/** Where a job goes after an attempt. */
export interface Next<S extends string> {
  state: S
  /** Until it is due again (ready) or its wait ends (waiting); ignored for final states. */
  delaySeconds?: number
}

/** One attempt as recorded. */
export interface AttemptRecord {
  outcome: string
  /** Epoch milliseconds. */
  startedAt: number
  durationMs: number
  error?: string | undefined
  /** Values of the spec's attempt columns, by name; a missing one is NULL. */
  columns?: Readonly<Record<string, unknown>> | undefined
}

export interface Settlement<S extends string, Id extends JobId> extends ClaimRef<Id> {
  attempt: AttemptRecord
  next: Next<S>
}

export interface JobQueue<S extends string, Id extends JobId, J> {
  readonly spec: QueueSpec<S, Id, J>
  /**
   * Claims up to `limit` ready jobs that are due (oldest due first) with FOR NO KEY UPDATE SKIP LOCKED, so no
   * two claimants ever get the same job: each moves to the claimed state with the next claim number,
   * held for `leaseSeconds`.
   */
  claim(db: Queryable, options: ClaimOptions<Id>): Promise<Claim<Id, J>[]>
  /** Extends the leases of claims still current; returns how many. */
  renew(db: Queryable, claims: readonly ClaimRef<Id>[], leaseSeconds: number): Promise<number>
  /**
   * Records every attempt (numbered by the attempts table's identity, never overwritten) and moves each
   * job whose fence is still current to its next state, in one statement. An attempt of a stale fence
   * is recorded with `stale` set and moves nothing. Throws IllegalTransitionError, before writing
   * anything, if a next state cannot follow the claimed state.
   */
  settle(db: Queryable, settlements: readonly Settlement<S, Id>[]): Promise<{ moved: number; stale: number }>
  /** settle() for one successful attempt (outcome 'succeeded' unless named); true when it moved the job. */
  complete(db: Queryable, claim: ClaimRef<Id>, next: Next<S>, attempt: AttemptInput): Promise<boolean>
  /** settle() for one failed attempt (outcome 'failed' unless named); true when it moved the job. */
  fail(
    db: Queryable,
    claim: ClaimRef<Id>,
    next: Next<S>,
    attempt: AttemptInput & { error: string },
  ): Promise<boolean>
  /** Hands claims still current back to the ready state, due now, and notifies; returns how many. */
  release(db: Queryable, claims: readonly ClaimRef<Id>[]): Promise<number>
  /**
   * Moves up to `limit` jobs whose due_at passed out of the claimed state (lease over: back to ready)
   * and out of waiting states (their timer's next state), and up to `limit` ready jobs of paused groups to
   * the held state; returns how many, and the seconds until the next job falls due (0: one is due now;
   * undefined: none waits), jobs of paused groups left out. Then runs the spec's repair (at most once a
   * second), its moves counted with the rest.
   */
  sweep(db: Queryable, limit: number): Promise<{ moved: number; nextDueSeconds: number | undefined }>
  /**
   * Puts up to `limit` held jobs of the groups given back in the ready state, the earliest due first
   * (one due later is due now), and notifies; returns how many. A group still paused stays held.
   */
  resume(db: Queryable, groups: readonly string[], limit: number): Promise<number>
  /** Runs the spec's repair once now (a batch); returns how many it moved. */
  repair(db: Queryable): Promise<number>
  /** Wakes the runners listening (after the transaction commits, when inside one). */
  notify(db: Queryable): Promise<void>
  /** The guard trigger's statements (state-machine.ts), for the migration that creates the table. */
  guardSql(): string[]
}

export type AttemptInput = Omit<AttemptRecord, 'outcome'> & { outcome?: string }
