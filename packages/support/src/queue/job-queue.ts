import type { Queryable } from '../storage/database.js'
import { IllegalTransitionError, type QueueMachine, sqlList, transitionGuardSql } from './state-machine.js'

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
   * undefined: none waits), jobs of paused groups left out.
   */
  sweep(db: Queryable, limit: number): Promise<{ moved: number; nextDueSeconds: number | undefined }>
  /**
   * Puts up to `limit` held jobs of the groups given back in the ready state, the earliest due first
   * (one due later is due now), and notifies; returns how many. A group still paused stays held.
   */
  resume(db: Queryable, groups: readonly string[], limit: number): Promise<number>
  /** Wakes the runners listening (after the transaction commits, when inside one). */
  notify(db: Queryable): Promise<void>
  /** The guard trigger's statements (state-machine.ts), for the migration that creates the table. */
  guardSql(): string[]
}

export type AttemptInput = Omit<AttemptRecord, 'outcome'> & { outcome?: string }

/** perGroup when there is none (an int4 parameter). */
const NO_GROUP_LIMIT = 2 ** 31 - 1

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

const NAME = /^[a-z_][a-z0-9_]*$/
const TYPE = /^[a-z][a-z0-9_ ]*$/

export function defineQueue<S extends string, Id extends JobId, J>(
  spec: QueueSpec<S, Id, J>,
): JobQueue<S, Id, J> {
  const extra = spec.attempts.columns ?? []
  for (const name of [
    spec.table,
    spec.idColumn,
    spec.attempts.table,
    spec.channel,
    ...extra.map((c) => c.name),
  ]) {
    if (!NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not a lower-case SQL identifier`)
  }
  for (const { type } of extra)
    if (!TYPE.test(type)) throw new Error(`${JSON.stringify(type)} is not a SQL type`)
  const { machine, table: t, idColumn: id, idType } = spec
  for (const timer of spec.timers ?? []) {
    if (!machine.waiting.includes(timer.state))
      throw new Error(`timer on ${timer.state}, not a waiting state`)
  }
  const ready = `'${machine.ready}'`
  const claimed = `'${machine.claimed}'`
  const finals = sqlList(machine.final)
  const notifySql = `SELECT pg_notify('${spec.channel}', '')`
  const held = machine.held === undefined ? undefined : `'${machine.held}'`
  if (spec.pausedGroups !== undefined && held === undefined) {
    throw new Error('pausedGroups needs a machine with a held state')
  }
  const unpaused = spec.pausedGroups
    ? `(group_key IS NULL OR group_key NOT IN (${spec.pausedGroups}))`
    : 'true'

  // The candidates are locked in due order; those past their group's room are left out of the update, and
  // their locks end with the statement. The claims come back in the order they were due in.
  const claimSql = (byIds: boolean) => {
    const named = byIds ? `${id} = ANY($8::${idType}[])` : 'false'
    return `WITH candidates AS (
       SELECT ${id}, group_key, due_at, ${named} AS named FROM ${t}
        WHERE state = ${ready} AND ${byIds ? `(due_at <= now() OR ${named})` : 'due_at <= now()'}
          AND (group_key IS NULL OR group_key <> ALL($3::text[])) AND ${unpaused}
        ORDER BY ${byIds ? `${named} DESC, ` : ''}due_at
        LIMIT $2
          FOR NO KEY UPDATE SKIP LOCKED),
     due AS (
       SELECT c.${id}, c.named, c.due_at FROM (SELECT ${id}, group_key, named, due_at,
                                   row_number() OVER (PARTITION BY group_key ORDER BY named DESC, due_at, ${id}) AS n
                              FROM candidates) c
         LEFT JOIN unnest($6::text[], $7::int[]) AS h(group_key, held) ON h.group_key = c.group_key
        WHERE c.group_key IS NULL OR c.n <= $5 - coalesce(h.held, 0)),
     claimed AS (
       UPDATE ${t} j SET state = ${claimed}, claim_no = j.claim_no + 1, claimed_by = $1, claimed_at = now(),
                         due_at = now() + make_interval(secs => $4)
         FROM due WHERE j.${id} = due.${id}
       RETURNING j.*, due.named AS queue_named, due.due_at AS queue_was_due)
     SELECT j.${id} AS queue_id, j.claim_no AS queue_claim_no, j.group_key AS queue_group, ${spec.claimed.select}
       FROM claimed j ${spec.claimed.joins ?? ''}
      ORDER BY j.queue_named DESC, j.queue_was_due, j.${id}`
  }
  const claimByDue = claimSql(false)
  const claimByIds = claimSql(true)

  // The fence: the claimant and claim number of the current claim, in the claimed state.
  const fenced = `j.${id} = r.id AND j.claimed_by = r.claimant AND j.claim_no = r.claim_no AND j.state = ${claimed}`
  const refs = `unnest($1::${idType}[], $2::text[], $3::int[]) AS r(id, claimant, claim_no)`
  const refParams = (claims: readonly ClaimRef<Id>[]) => [
    claims.map((c) => c.id),
    claims.map((c) => c.fence.claimant),
    claims.map((c) => c.fence.claimNo),
  ]

  // Every statement that waits for the locks of several jobs takes them in id order (as the application
  // must, e.g. a receipt confirming deliveries): two such statements over the same jobs then queue behind
  // each other instead of deadlocking — which PostgreSQL resolves only after deadlock_timeout (1 s), by
  // aborting one of them. NO KEY UPDATE, because no key changes: the attempts' foreign key checks
  // (KEY SHARE) need not wait.
  const lockFenced = (r: string) =>
    `locked AS (SELECT j.${id} FROM ${t} j, ${r} WHERE ${fenced} ORDER BY j.${id} FOR NO KEY UPDATE OF j)`
  const renewSql = `WITH ${lockFenced(refs)}
     UPDATE ${t} j SET due_at = now() + make_interval(secs => $4) FROM locked l WHERE j.${id} = l.${id}
     RETURNING 1`
  const releaseSql = `WITH ${lockFenced(refs)},
     released AS (
       UPDATE ${t} j SET state = ${ready}, due_at = now(), claimed_by = NULL FROM locked l WHERE j.${id} = l.${id}
       RETURNING 1),
     counted AS (SELECT count(*) AS released FROM released)
     SELECT released, CASE WHEN released > 0 THEN pg_notify('${spec.channel}', '') END FROM counted`

  const nextState = spec.settle?.state ?? 'r.state'
  const columnNames = extra.map((c) => c.name)
  const settleSql = `WITH r AS (
       SELECT * FROM unnest($1::${idType}[], $2::text[], $3::int[], $4::text[], $5::float8[], $6::text[], $7::text[],
                            $8::float8[], $9::int[]${extra.map((c, i) => `, $${10 + i}::${c.type}[]`).join('')})
         AS r(id, claimant, claim_no, state, delay, outcome, error, started_ms, duration_ms${columnNames.map((n) => `, ${n}`).join('')})),
     ${lockFenced('r')},
     moved AS (
       UPDATE ${t} j
          SET state = ${nextState},
              due_at = CASE WHEN ${nextState} IN (${finals}) THEN NULL ELSE now() + make_interval(secs => r.delay) END,
              claimed_by = NULL${spec.settle?.set ? `, ${spec.settle.set(nextState)}` : ''}
         FROM r, locked l
        WHERE j.${id} = l.${id} AND ${fenced}
       RETURNING j.${id} AS id, j.claim_no, j.state, j.due_at),
     recorded AS (
       INSERT INTO ${spec.attempts.table} (${id}, claim_no, claimed_by, started_at, duration_ms, outcome, error, stale,
                                          next_attempt_at${columnNames.map((n) => `, ${n}`).join('')})
       SELECT r.id, r.claim_no, r.claimant, to_timestamp(r.started_ms / 1000), r.duration_ms, r.outcome, r.error,
              m.id IS NULL, CASE WHEN m.state = ${ready} THEN m.due_at END${columnNames.map((n) => `, r.${n}`).join('')}
         FROM r LEFT JOIN moved m ON m.id = r.id AND m.claim_no = r.claim_no
       RETURNING stale)
     SELECT count(*) FILTER (WHERE NOT stale) AS moved, count(*) FILTER (WHERE stale) AS stale FROM recorded`

  const timers = spec.timers ?? []
  const sweptState = `CASE j.state WHEN ${claimed} THEN ${ready}${timers
    .map((timer) => ` WHEN '${timer.state}' THEN (${timer.next})`)
    .join('')} END`
  // A paused group's ready jobs are held a batch at a time, found by the group index (not the due index).
  const holdSql = spec.pausedGroups
    ? `,
     paused (group_key) AS (${spec.pausedGroups}),
     held AS (
       UPDATE ${t} j SET state = ${held}
         FROM (SELECT ${id} FROM ${t}
                WHERE state = ${ready} AND group_key IS NOT NULL
                  AND group_key = ANY (ARRAY(SELECT group_key FROM paused))
                LIMIT $1
                  FOR NO KEY UPDATE SKIP LOCKED) x
        WHERE j.${id} = x.${id}
       RETURNING 1)`
    : ''
  const sweepSql = `WITH expired AS (
       UPDATE ${t} j SET state = ${sweptState},
                         due_at = CASE WHEN ${sweptState} IN (${finals}) THEN NULL ELSE now() END, claimed_by = NULL
         FROM (SELECT ${id} FROM ${t}
                WHERE due_at <= now() AND state IN (${sqlList([machine.claimed, ...timers.map((timer) => timer.state)])})
                ORDER BY due_at LIMIT $1
                  FOR NO KEY UPDATE SKIP LOCKED) x
        WHERE j.${id} = x.${id}
       RETURNING 1)${holdSql}
     SELECT (SELECT count(*) FROM expired)${spec.pausedGroups ? ' + (SELECT count(*) FROM held)' : ''} AS moved,
            (SELECT greatest(extract(epoch FROM min(due_at) - now()), 0)::float8 FROM ${t}
              WHERE due_at IS NOT NULL${held ? ` AND state <> ${held}` : ''} AND (state <> ${ready} OR ${unpaused})) AS seconds`

  // Chosen in due order, locked in id order (as every statement over several jobs locks them).
  const resumeSql = `WITH chosen AS (
       SELECT j.${id} FROM ${t} j
        WHERE j.state = ${held} AND j.${id} IN (SELECT ${id} FROM ${t}
                                                 WHERE state = ${held} AND group_key = ANY($1::text[]) AND ${unpaused}
                                                 ORDER BY due_at LIMIT $2)
        ORDER BY j.${id} FOR NO KEY UPDATE OF j),
     resumed AS (
       UPDATE ${t} j SET state = ${ready}, due_at = least(j.due_at, now()) FROM chosen c WHERE j.${id} = c.${id}
       RETURNING 1),
     counted AS (SELECT count(*) AS resumed FROM resumed)
     SELECT resumed, CASE WHEN resumed > 0 THEN pg_notify('${spec.channel}', '') END FROM counted`

  const checkNext = (next: Next<S>) => {
    if (!machine.allows(machine.claimed, next.state))
      throw new IllegalTransitionError(machine.claimed, next.state)
    const problem = nextProblem(machine, next)
    if (problem !== undefined) throw new Error(problem)
  }

  const queue: JobQueue<S, Id, J> = {
    spec,

    async claim(db, options) {
      const byIds = options.ids !== undefined && options.ids.length > 0
      const held = options.heldByGroup ?? new Map<string, number>()
      const rows = await db.query<Record<string, unknown>>(byIds ? claimByIds : claimByDue, [
        options.claimant,
        options.limit,
        options.excludeGroups ?? [],
        options.leaseSeconds,
        Math.min(options.perGroup ?? NO_GROUP_LIMIT, NO_GROUP_LIMIT),
        [...held.keys()],
        [...held.values()],
        ...(byIds ? [options.ids] : []),
      ])
      return rows.map((row) => ({
        id: row.queue_id as Id,
        fence: { claimant: options.claimant, claimNo: row.queue_claim_no as number },
        group: (row.queue_group as string | null) ?? null,
        job: spec.claimed.parse(row),
      }))
    },

    async renew(db, claims, leaseSeconds) {
      if (claims.length === 0) return 0
      const rows = await db.query(renewSql, [...refParams(claims), leaseSeconds])
      return rows.length
    },

    async settle(db, settlements) {
      if (settlements.length === 0) return { moved: 0, stale: 0 }
      for (const settlement of settlements) checkNext(settlement.next)
      const column = <T>(pick: (s: Settlement<S, Id>) => T) => settlements.map(pick)
      const [row] = await db.query<{ moved: number; stale: number }>(settleSql, [
        ...refParams(settlements),
        column((s) => s.next.state),
        column((s) => s.next.delaySeconds ?? 0),
        column((s) => s.attempt.outcome),
        column((s) => s.attempt.error?.slice(0, MAX_ERROR_LENGTH) ?? null),
        column((s) => s.attempt.startedAt),
        column((s) => Math.round(s.attempt.durationMs)),
        ...extra.map((c) => column((s) => s.attempt.columns?.[c.name] ?? null)),
      ])
      return { moved: row?.moved ?? 0, stale: row?.stale ?? 0 }
    },

    async complete(db, claim, next, attempt) {
      const { moved } = await queue.settle(db, [
        { ...claim, next, attempt: { ...attempt, outcome: attempt.outcome ?? 'succeeded' } },
      ])
      return moved === 1
    },

    async fail(db, claim, next, attempt) {
      const { moved } = await queue.settle(db, [
        { ...claim, next, attempt: { ...attempt, outcome: attempt.outcome ?? 'failed' } },
      ])
      return moved === 1
    },

    async release(db, claims) {
      if (claims.length === 0) return 0
      const [row] = await db.query<{ released: number }>(releaseSql, refParams(claims))
      return row?.released ?? 0
    },

    async sweep(db, limit) {
      const [row] = await db.query<{ moved: number; seconds: number | null }>(sweepSql, [limit])
      return { moved: row?.moved ?? 0, nextDueSeconds: row?.seconds ?? undefined }
    },

    async resume(db, groups, limit) {
      if (held === undefined) throw new Error('a queue without a held state holds nothing to resume')
      if (groups.length === 0) return 0
      const [row] = await db.query<{ resumed: number }>(resumeSql, [groups, limit])
      return row?.resumed ?? 0
    },

    async notify(db) {
      await db.query(notifySql)
    },

    guardSql: () => transitionGuardSql(machine, t),
  }
  return queue
}
