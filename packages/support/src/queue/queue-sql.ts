import type { Claim, ClaimRef, JobId, QueueSpec } from './queue-types.js'
import { sqlList } from './state-machine.js'

const NAME = /^[a-z_][a-z0-9_]*$/
const TYPE = /^[a-z][a-z0-9_ ]*$/

/** Refuses a spec whose names are not plain SQL identifiers (they are written into the statements). */
export function checkQueueSpec<S extends string, Id extends JobId, J>(spec: QueueSpec<S, Id, J>): void {
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
  for (const name of Object.values(spec.rated ?? {})) {
    if (!NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not a lower-case SQL identifier`)
  }
  for (const timer of spec.timers ?? []) {
    if (!spec.machine.waiting.includes(timer.state))
      throw new Error(`timer on ${timer.state}, not a waiting state`)
  }
  if (spec.pausedGroups !== undefined && spec.machine.held === undefined) {
    throw new Error('pausedGroups needs a machine with a held state')
  }
}

type Rated = NonNullable<QueueSpec<string, JobId, unknown>['rated']>

const throttledGroups = ({ table, key, perSecond, nextAt }: Rated) =>
  `SELECT ${key}::text FROM ${table} WHERE ${perSecond} IS NOT NULL AND ${nextAt} > now()`

/** The queue's statements, written from its spec. */
export interface QueueStatements {
  claimByDue: string
  claimByIds: string
  /** A claim leaving groups out: group by group where the queue has paused groups (and so their indexes). */
  claimOthers: string
  renew: string
  release: string
  settle: string
  /**
   * The sweep, with its limit written in rather than passed: PostgreSQL plans a prepared statement once (a
   * generic plan) only while that plan's estimated cost is no higher than the plans made for the values
   * given, and a generic plan guesses that a LIMIT it cannot see reads a tenth of the rows. With the limit a
   * parameter, the sweep was planned at every call, which cost ten times more than running it. One statement
   * per limit: a runner sweeps with one.
   */
  sweep(limit: number): string
  resume: string
  notify: string
}

/** The names a spec's statements are written with. */
function namesOf<S extends string, Id extends JobId, J>(spec: QueueSpec<S, Id, J>) {
  const { machine } = spec
  return {
    t: spec.table,
    id: spec.idColumn,
    idType: spec.idType,
    ready: `'${machine.ready}'`,
    claimed: `'${machine.claimed}'`,
    held: machine.held === undefined ? undefined : `'${machine.held}'`,
    finals: sqlList(machine.final),
    unpaused: spec.pausedGroups ? `(group_key IS NULL OR group_key NOT IN (${spec.pausedGroups}))` : 'true',
    /** Ready jobs of a rated group whose next attempt's time has not come are not due yet. */
    unthrottled: spec.rated
      ? `(group_key IS NULL OR group_key NOT IN (${throttledGroups(spec.rated)}))`
      : 'true',
  }
}
type Names = ReturnType<typeof namesOf>

export function queueStatements<S extends string, Id extends JobId, J>(
  spec: QueueSpec<S, Id, J>,
): QueueStatements {
  const names = namesOf(spec)
  const claimByDue = claimSql(spec, names, 'due')
  const sweeps = new Map<number, string>()
  return {
    claimByDue,
    claimByIds: claimSql(spec, names, 'ids'),
    claimOthers: spec.pausedGroups === undefined ? claimByDue : claimSql(spec, names, 'others'),
    renew: renewSql(names),
    release: releaseSql(spec, names),
    settle: settleSql(spec, names),
    sweep: (limit) => {
      if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`limit ${limit} is not a count`)
      let sql = sweeps.get(limit)
      if (sql === undefined) {
        sql = sweepSql(spec, names, limit)
        sweeps.set(limit, sql)
      }
      return sql
    },
    resume: resumeSql(spec, names),
    notify: `SELECT pg_notify('${spec.channel}', '')`,
  }
}

/** The parameters of a fenced statement: ids, claimants and claim numbers. */
export function refParams<Id extends JobId>(claims: readonly ClaimRef<Id>[]): unknown[] {
  return [claims.map((c) => c.id), claims.map((c) => c.fence.claimant), claims.map((c) => c.fence.claimNo)]
}

/** A claim as the claim statements return it. */
export function claimOf<Id extends JobId, J>(
  spec: QueueSpec<string, Id, J>,
  claimant: string,
  row: Record<string, unknown>,
): Claim<Id, J> {
  return {
    id: row.queue_id as Id,
    fence: { claimant, claimNo: row.queue_claim_no as number },
    group: (row.queue_group as string | null) ?? null,
    job: spec.claimed.parse(row),
  }
}

type ClaimMode = 'due' | 'ids' | 'others'

/**
 * The candidates are locked in due order; those past their group's room are left out of the update, and
 * their locks end with the statement. The claims come back in the order they were due in.
 */
function claimSql(spec: QueueSpec<string, JobId, unknown>, n: Names, mode: ClaimMode): string {
  const { t, id, claimed } = n
  const { rated } = spec
  const room = rated
    ? `least($5 - coalesce(h.held, 0), CASE WHEN rt.${rated.perSecond} IS NULL THEN $5 ELSE greatest(1, floor(rt.${rated.perSecond} / 10.0)) END)`
    : '$5 - coalesce(h.held, 0)'
  return `${mode === 'others' ? othersCandidatesSql(n) : candidatesSql(n, mode === 'ids')},
     due AS (
       SELECT c.${id}, c.named, c.due_at, c.group_key FROM (SELECT ${id}, group_key, named, due_at,
                                   row_number() OVER (PARTITION BY group_key ORDER BY named DESC, due_at, ${id}) AS n
                              FROM candidates) c
         LEFT JOIN unnest($6::text[], $7::int[]) AS h(group_key, held) ON h.group_key = c.group_key${
           rated
             ? `
         LEFT JOIN ${rated.table} rt ON rt.${rated.key}::text = c.group_key`
             : ''
         }
        WHERE c.group_key IS NULL OR c.n <= ${room}),${
          rated
            ? `
     ${rateTakenSql(rated)},`
            : ''
        }
     claimed AS (
       UPDATE ${t} j SET state = ${claimed}, claim_no = j.claim_no + 1, claimed_by = $1, claimed_at = now(),
                         due_at = now() + make_interval(secs => $4)
         FROM due WHERE j.${id} = due.${id}
       RETURNING j.*, due.named AS queue_named, due.due_at AS queue_was_due)
     SELECT j.${id} AS queue_id, j.claim_no AS queue_claim_no, j.group_key AS queue_group, ${spec.claimed.select}
       FROM claimed j ${spec.claimed.joins ?? ''}
      ORDER BY j.queue_named DESC, j.queue_was_due, j.${id}`
}

/** The due jobs, or those named first ($8), in due order: a claim's candidates, locked. */
function candidatesSql(n: Names, byIds: boolean): string {
  const { t, id, idType, ready, unpaused, unthrottled } = n
  const named = byIds ? `${id} = ANY($8::${idType}[])` : 'false'
  return `WITH candidates AS (
       SELECT ${id}, group_key, due_at, ${named} AS named FROM ${t}
        WHERE state = ${ready} AND ${byIds ? `(due_at <= now() OR ${named})` : 'due_at <= now()'}
          AND (group_key IS NULL OR group_key <> ALL($3::text[])) AND ${unpaused} AND ${unthrottled}
        ORDER BY ${byIds ? `${named} DESC, ` : ''}due_at
        LIMIT $2
          FOR NO KEY UPDATE SKIP LOCKED)`
}

/**
 * The due jobs of the groups not left out ($3), found group by group: the groups with ready jobs read from
 * the ready-by-group index one at a time (a loose index scan), each group not left out read from the front
 * of its due jobs, the ungrouped ones from an index of their own; the earliest due of them are then locked
 * by key, one at a time. Read in due order instead, a claim leaving out a group with a backlog read past all
 * of it, to come back with nothing when no other group had a job due: its cost grew with that backlog, once
 * for each batch the group was given.
 */
function othersCandidatesSql(n: Names): string {
  const { t, id, ready, unpaused, unthrottled } = n
  return `WITH RECURSIVE ready_groups (group_key) AS (
       (SELECT group_key FROM ${t} WHERE state = ${ready} AND group_key IS NOT NULL ORDER BY group_key LIMIT 1)
       UNION ALL
       SELECT (SELECT j.group_key FROM ${t} j WHERE j.state = ${ready} AND j.group_key > g.group_key
                ORDER BY j.group_key LIMIT 1)
         FROM ready_groups g WHERE g.group_key IS NOT NULL),
     firsts AS (
       SELECT x.${id}, x.due_at FROM ready_groups g
        CROSS JOIN LATERAL (SELECT ${id}, due_at FROM ${t}
                             WHERE state = ${ready} AND group_key IS NOT NULL
                               AND (group_key, due_at) > (g.group_key, '-infinity')
                               AND (group_key, due_at) <= (g.group_key, now())
                             ORDER BY group_key, due_at LIMIT $2) x
        WHERE g.group_key IS NOT NULL AND g.group_key <> ALL($3::text[]) AND ${unpaused} AND ${unthrottled}
       UNION ALL
       (SELECT ${id}, due_at FROM ${t} WHERE state = ${ready} AND group_key IS NULL AND due_at <= now()
         ORDER BY due_at LIMIT $2)),
     candidates AS (
       SELECT c.${id}, c.group_key, c.due_at, false AS named
         FROM (SELECT ${id} FROM firsts ORDER BY due_at LIMIT $2) f
        CROSS JOIN LATERAL (SELECT ${id}, group_key, due_at FROM ${t}
                             WHERE ${id} = f.${id} AND state = ${ready} AND due_at <= now()
                               FOR NO KEY UPDATE SKIP LOCKED) c)`
}

/**
 * Moves each rated group's next attempt time on by what the claim took of it. A claim that comes up to a
 * tenth of a second after that time (the claimant woke late) keeps the schedule, so that the lateness is
 * made up rather than lost; after a longer pause the schedule starts again a tenth of a second back.
 */
function rateTakenSql({ table, key, perSecond, nextAt }: Rated): string {
  return `rate_taken AS (
       UPDATE ${table} rt SET ${nextAt} = greatest(rt.${nextAt}, now() - interval '100 milliseconds')
                                      + make_interval(secs => taken.n / rt.${perSecond}::float8)
         FROM (SELECT group_key, count(*) AS n FROM due WHERE group_key IS NOT NULL GROUP BY group_key) taken
        WHERE rt.${key}::text = taken.group_key AND rt.${perSecond} IS NOT NULL)`
}

/** The fence: the claimant and claim number of the current claim, in the claimed state. */
const fenced = ({ id, claimed }: Names) =>
  `j.${id} = r.id AND j.claimed_by = r.claimant AND j.claim_no = r.claim_no AND j.state = ${claimed}`
const refs = ({ idType }: Names) =>
  `unnest($1::${idType}[], $2::text[], $3::int[]) AS r(id, claimant, claim_no)`

/**
 * Every statement that waits for the locks of several jobs takes them in id order (as the application
 * must, e.g. a receipt confirming deliveries): two such statements over the same jobs then queue behind
 * each other instead of deadlocking — which PostgreSQL resolves only after deadlock_timeout (1 s), by
 * aborting one of them. NO KEY UPDATE, because no key changes: the attempts' foreign key checks (KEY SHARE)
 * need not wait. The rows are found by id, claimant and claim number only, so that the primary key is the
 * one way to them: with the state among the conditions, a partial index over some states (whose size the
 * planner reads from statistics taken when it was nearly empty) looked cheaper, and was read whole. The
 * statements check the state again where they change the row.
 */
const lockFenced = (n: Names, r: string) =>
  `locked AS (SELECT j.${n.id} FROM ${n.t} j, ${r}
               WHERE j.${n.id} = r.id AND j.claimed_by = r.claimant AND j.claim_no = r.claim_no
               ORDER BY j.${n.id} FOR NO KEY UPDATE OF j)`

function renewSql(n: Names): string {
  return `WITH ${lockFenced(n, refs(n))}
     UPDATE ${n.t} j SET due_at = now() + make_interval(secs => $4) FROM locked l
      WHERE j.${n.id} = l.${n.id} AND j.state = ${n.claimed}
     RETURNING 1`
}

function releaseSql(spec: QueueSpec<string, JobId, unknown>, n: Names): string {
  return `WITH ${lockFenced(n, refs(n))},
     released AS (
       UPDATE ${n.t} j SET state = ${n.ready}, due_at = now(), claimed_by = NULL FROM locked l
        WHERE j.${n.id} = l.${n.id} AND j.state = ${n.claimed}
       RETURNING 1),
     counted AS (SELECT count(*) AS released FROM released)
     SELECT released, CASE WHEN released > 0 THEN pg_notify('${spec.channel}', '') END FROM counted`
}

/** Moves each fenced job to its next state and records its attempt (stale when its claim was not current). */
function settleSql(spec: QueueSpec<string, JobId, unknown>, n: Names): string {
  const { t, id, idType, ready, finals } = n
  const extra = spec.attempts.columns ?? []
  const nextState = spec.settle?.state ?? 'r.state'
  const columnNames = extra.map((c) => c.name)
  return `WITH r AS (
       SELECT * FROM unnest($1::${idType}[], $2::text[], $3::int[], $4::text[], $5::float8[], $6::text[], $7::text[],
                            $8::float8[], $9::int[]${extra.map((c, i) => `, $${10 + i}::${c.type}[]`).join('')})
         AS r(id, claimant, claim_no, state, delay, outcome, error, started_ms, duration_ms${columnNames.map((c) => `, ${c}`).join('')})),
     ${lockFenced(n, 'r')},
     moved AS (
       UPDATE ${t} j
          SET state = ${nextState},
              due_at = CASE WHEN ${nextState} IN (${finals}) THEN NULL ELSE now() + make_interval(secs => r.delay) END,
              claimed_by = NULL${spec.settle?.set ? `, ${spec.settle.set(nextState)}` : ''}
         FROM r, locked l
        WHERE j.${id} = l.${id} AND ${fenced(n)}
       RETURNING j.${id} AS id, j.claim_no, j.state, j.due_at),
     recorded AS (
       INSERT INTO ${spec.attempts.table} (${id}, claim_no, claimed_by, started_at, duration_ms, outcome, error, stale,
                                          next_attempt_at${columnNames.map((c) => `, ${c}`).join('')})
       SELECT r.id, r.claim_no, r.claimant, to_timestamp(r.started_ms / 1000), r.duration_ms, r.outcome, r.error,
              m.id IS NULL, CASE WHEN m.state = ${ready} THEN m.due_at END${columnNames.map((c) => `, r.${c}`).join('')}
         FROM r LEFT JOIN moved m ON m.id = r.id AND m.claim_no = r.claim_no
       RETURNING stale)
     SELECT count(*) FILTER (WHERE NOT stale) AS moved, count(*) FILTER (WHERE stale) AS stale FROM recorded`
}

/**
 * Moves on the claims whose lease ended and the waiting jobs whose timer is up, holds a paused group's
 * ready jobs (a batch at a time, read group by group through the group index), and says when the next job
 * falls due: the soonest of the ready jobs a claim may take and of the jobs this sweep moves on, each read
 * from the front of its own due-time index.
 */
function sweepSql(spec: QueueSpec<string, JobId, unknown>, n: Names, limit: number): string {
  const { t, id, ready, claimed, held, finals, unpaused, unthrottled } = n
  const timers = spec.timers ?? []
  const sweptState = `CASE j.state WHEN ${claimed} THEN ${ready}${timers
    .map((timer) => ` WHEN '${timer.state}' THEN (${timer.next})`)
    .join('')} END`
  const swept = sqlList([spec.machine.claimed, ...timers.map((timer) => timer.state)])
  // One group at a time (a lateral probe of the group index per paused group), never one pass over every
  // ready job looking for paused groups' among them: with no group paused, the hold reads nothing.
  const holdSql = spec.pausedGroups
    ? `,
     paused (group_key) AS (${spec.pausedGroupsLocked ?? spec.pausedGroups}),
     held AS (
       UPDATE ${t} j SET state = ${held}
         FROM (SELECT x.${id} FROM paused p
                CROSS JOIN LATERAL (SELECT ${id} FROM ${t} WHERE group_key = p.group_key AND state = ${ready}
                                     LIMIT ${limit} FOR NO KEY UPDATE SKIP LOCKED) x
                LIMIT ${limit}) x
        WHERE j.${id} = x.${id}
       RETURNING 1)`
    : ''
  const soonest = [
    `(SELECT min(due_at) FROM ${t} WHERE state = ${ready} AND ${unpaused} AND ${unthrottled})`,
    `(SELECT min(due_at) FROM ${t} WHERE state IN (${swept}))`,
    ...(spec.rated ? [`(${throttledUntilSql(spec.rated, n)})`] : []),
  ]
  return `WITH expired AS (
       UPDATE ${t} j SET state = ${sweptState},
                         due_at = CASE WHEN ${sweptState} IN (${finals}) THEN NULL ELSE now() END, claimed_by = NULL
         FROM (SELECT ${id} FROM ${t}
                WHERE due_at <= now() AND state IN (${swept})
                ORDER BY due_at LIMIT ${limit}
                  FOR NO KEY UPDATE SKIP LOCKED) x
        WHERE j.${id} = x.${id}
       RETURNING 1)${holdSql}
     SELECT (SELECT count(*) FROM expired)${spec.pausedGroups ? ' + (SELECT count(*) FROM held)' : ''} AS moved,
            greatest(extract(epoch FROM least(${soonest.join(', ')}) - now()), 0)::float8 AS seconds`
}

/** The soonest a throttled group with jobs due by then may be attempted again. */
function throttledUntilSql({ table, key, perSecond, nextAt }: Rated, { t, ready }: Names): string {
  return `SELECT min(rt.${nextAt}) FROM ${table} rt
           WHERE rt.${perSecond} IS NOT NULL AND rt.${nextAt} > now()
             AND EXISTS (SELECT 1 FROM ${t} WHERE group_key = rt.${key}::text AND state = ${ready} AND due_at <= rt.${nextAt})`
}

/** Puts held jobs of groups back to ready: chosen in due order, locked in id order (as every statement over several jobs locks them). */
function resumeSql(spec: QueueSpec<string, JobId, unknown>, n: Names): string {
  const { t, id, ready, held, unpaused } = n
  return `WITH chosen AS (
       SELECT j.${id} FROM ${t} j
        WHERE j.state = ${held} AND j.${id} IN (SELECT ${id} FROM ${t}
                                                 WHERE state = ${held} AND group_key = ANY($1::text[]) AND ${unpaused}
                                                 ORDER BY due_at LIMIT $2)
        ORDER BY j.${id} FOR NO KEY UPDATE OF j),
     resumed AS (
       UPDATE ${t} j SET state = ${ready}, due_at = ${spec.resumeDue ?? 'least(j.due_at, now())'} FROM chosen c WHERE j.${id} = c.${id}
       RETURNING 1),
     counted AS (SELECT count(*) AS resumed FROM resumed)
     SELECT resumed, CASE WHEN resumed > 0 THEN pg_notify('${spec.channel}', '') END FROM counted`
}
