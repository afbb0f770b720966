/**
 * A queued job's states and the transitions allowed between them, written once. The queue's statements
 * follow it, and `transitionGuardSql` turns it into a trigger that refuses any other change of state, so
 * a statement written elsewhere (an operator's replay, a callback) cannot break it either.
 */
export interface Transition<S extends string> {
  from: S
  to: S
  /** What moves the job: a short name queries can select transitions by (e.g. 'replay'), then why. */
  on: string
}

export interface QueueMachineDefinition<S extends string> {
  /** Due for an attempt when its due_at comes: a claim takes it. */
  ready: S
  /** Held by a claim whose lease ends at due_at. */
  claimed: S
  /**
   * Where the ready jobs of a paused group wait (QueueSpec.pausedGroups), out of the due path: claims,
   * sweeps and counts of what is due never read through them. They keep their due_at, and resume() puts
   * them back in due order.
   */
  held?: S
  /** States that wait for due_at, then are moved on by the queue's sweep (QueueSpec.timers). */
  waiting?: readonly S[]
  /**
   * States without a due_at that wait for an explicit statement to make them ready (e.g. for an earlier
   * job of the same key to finish): out of the due path, as held jobs are.
   */
  parked?: readonly S[]
  /** States without a due_at: only an explicit statement (replay, callback) moves a job out of one. */
  final: readonly S[]
  transitions: readonly Transition<S>[]
}

export interface QueueMachine<S extends string>
  extends Required<Omit<QueueMachineDefinition<S>, 'held'>>,
    Pick<QueueMachineDefinition<S>, 'held'> {
  /** Every state: ready, claimed, held, waiting, parked, then final. */
  readonly states: readonly S[]
  allows(from: S, to: S): boolean
  /** The states a transition named `on` leaves from (into `to`, when given). */
  sources(on: string, to?: S): S[]
  /** The states a shortest walk of allowed transitions passes from `from` to `to` (`to` last); undefined if none. */
  path(from: S, to: S): S[] | undefined
}

/** A job was asked to move between two states the machine does not connect. */
export class IllegalTransitionError extends Error {
  readonly code = 'ERR_ILLEGAL_TRANSITION'
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super(`illegal transition: ${from} → ${to}`)
    this.name = 'IllegalTransitionError'
  }
}

/** The SQLSTATE the guard trigger raises (a class of its own, so nothing else raises it). */
export const ILLEGAL_TRANSITION_SQLSTATE = 'EQ001'

/** True for the database error the guard trigger raises. */
export function isIllegalTransition(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === ILLEGAL_TRANSITION_SQLSTATE
}

const NAME = /^[a-z][a-z0-9_]*$/

/** Checks the definition (names are inlined in SQL) and indexes it. */
export function defineQueueMachine<const S extends string>(
  definition: QueueMachineDefinition<S>,
): QueueMachine<S> {
  const waiting = definition.waiting ?? []
  const parked = definition.parked ?? []
  const held = definition.held === undefined ? [] : [definition.held]
  const states = [definition.ready, definition.claimed, ...held, ...waiting, ...parked, ...definition.final]
  for (const state of states) {
    if (!NAME.test(state)) throw new Error(`state ${JSON.stringify(state)} is not a lower-case identifier`)
  }
  if (new Set(states).size !== states.length)
    throw new Error(`a state is listed twice in ${states.join(', ')}`)
  const known = new Set<string>(states)
  const allowed = new Set<string>()
  for (const { from, to } of definition.transitions) {
    if (!known.has(from) || !known.has(to))
      throw new Error(`transition ${from} → ${to} names an unknown state`)
    if (from === to) throw new Error(`transition ${from} → ${to} changes nothing`)
    allowed.add(pair(from, to))
  }
  const needed = [
    [definition.ready, definition.claimed],
    [definition.claimed, definition.ready],
    ...held.flatMap((state) => [
      [definition.ready, state],
      [state, definition.ready],
    ]),
  ] as const
  for (const [from, to] of needed) {
    if (!allowed.has(pair(from, to))) throw new Error(`a queue needs the transition ${from} → ${to}`)
  }
  return {
    ...definition,
    waiting,
    parked,
    states,
    allows: (from, to) => allowed.has(pair(from, to)),
    sources: (on, to) => [
      ...new Set(
        definition.transitions
          .filter((t) => t.on === on && (to === undefined || t.to === to))
          .map((t) => t.from),
      ),
    ],
    path(from, to) {
      const cameFrom = new Map<S, S>([[from, from]])
      const frontier = [from]
      for (let state = frontier.shift(); state !== undefined; state = frontier.shift()) {
        if (state === to) {
          const walk: S[] = []
          for (let at = to; at !== from; at = cameFrom.get(at) as S) walk.unshift(at)
          return walk
        }
        for (const { from: source, to: next } of definition.transitions) {
          if (source === state && !cameFrom.has(next)) {
            cameFrom.set(next, state)
            frontier.push(next)
          }
        }
      }
      return undefined
    },
  }
}

const pair = (from: string, to: string) => `${from}>${to}`

/** `state IN (...)` over every state, for a CHECK constraint. */
export function stateCheckSql(machine: QueueMachine<string>): string {
  return `state IN (${sqlList(machine.states)})`
}

/** A job has a due_at exactly when it is neither parked nor in a final state, for a CHECK constraint. */
export function dueCheckSql(machine: QueueMachine<string>): string {
  return `(due_at IS NULL) = (state IN (${sqlList([...machine.parked, ...machine.final])}))`
}

/**
 * `(due_at) WHERE due_at IS NOT NULL AND state <> held`: the columns and predicate of the index claims and
 * sweeps read in due order (QueueSpec), which held jobs stay out of.
 */
export function dueIndexSql(machine: QueueMachine<string>): string {
  return `(due_at) WHERE due_at IS NOT NULL${machine.held ? ` AND state <> '${machine.held}'` : ''}`
}

/**
 * The indexes a queue with a held state finds a group's jobs by: `held`, `(group_key, due_at) WHERE state =
 * held`, to resume them in due order; `ready`, `(group_key, due_at) WHERE state = ready AND group_key IS NOT
 * NULL`, to hold them, and for a claim leaving groups out to read each other group's due jobs;
 * `ungrouped`, `(due_at) WHERE state = ready AND group_key IS NULL`, for that claim's jobs of no group. No
 * predicate follows from a claim's in due order, so that no such claim is ever planned through them (with
 * statistics behind a bulk insert, one was, and read past every held job).
 */
export function groupIndexesSql(machine: QueueMachine<string>): {
  held: string
  ready: string
  ungrouped: string
} {
  if (!machine.held) throw new Error('a queue without a held state holds no group')
  const ready = `state = '${machine.ready}'`
  return {
    held: `(group_key, due_at) WHERE state = '${machine.held}'`,
    ready: `(group_key, due_at) WHERE ${ready} AND group_key IS NOT NULL`,
    ungrouped: `(due_at) WHERE ${ready} AND group_key IS NULL`,
  }
}

/**
 * `(due_at) WHERE state IN (claimed, waiting...)`: the columns and predicate of the partial index the
 * queue's sweep reads, so that a backlog of ready jobs due now is not scanned by every sweep.
 */
export function sweepIndexSql(machine: QueueMachine<string>): string {
  return `(due_at) WHERE state IN (${sqlList([machine.claimed, ...machine.waiting])})`
}

/** `'a', 'b'`: names (checked identifiers) as SQL string literals, for IN lists. */
export const sqlList = (names: readonly string[]) => names.map((name) => `'${name}'`).join(', ')

/**
 * The statements creating (or replacing) the trigger on `table` that raises ILLEGAL_TRANSITION_SQLSTATE
 * on any UPDATE of `state` to a state the machine does not allow from the old one. PL/pgSQL: runs on
 * PGlite and PostgreSQL. The trigger's WHEN condition holds the check too, so that an allowed
 * transition costs no call of the function. A later change of the machine needs a new migration
 * running these again.
 */
export function transitionGuardSql(machine: QueueMachine<string>, table: string): string[] {
  if (!NAME.test(table)) throw new Error(`table ${JSON.stringify(table)} is not a lower-case identifier`)
  const name = `${table}_transition_guard`
  const pairs = [...new Set(machine.transitions.map((t) => pair(t.from, t.to)))].sort()
  const allowed = `OLD.state || '>' || NEW.state = ANY ('{${pairs.join(',')}}'::text[])`
  return [
    `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $guard$
BEGIN
  IF ${allowed} THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'illegal transition of a row of %: % → %', TG_TABLE_NAME, OLD.state, NEW.state
    USING ERRCODE = '${ILLEGAL_TRANSITION_SQLSTATE}';
END
$guard$`,
    `DROP TRIGGER IF EXISTS ${name} ON ${table}`,
    `CREATE TRIGGER ${name} BEFORE UPDATE OF state ON ${table} FOR EACH ROW
       WHEN (OLD.state IS DISTINCT FROM NEW.state AND NOT coalesce(${allowed}, false))
       EXECUTE FUNCTION ${name}()`,
  ]
}
