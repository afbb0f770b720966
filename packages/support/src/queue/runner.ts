import { randomUUID } from 'node:crypto'
import type { Database } from '../storage/database.js'
import {
  type AttemptRecord,
  type Claim,
  type ClaimRef,
  type JobId,
  type JobQueue,
  type Next,
  nextProblem,
  type Settlement,
} from './job-queue.js'

/** What the application's work step says about one attempt. */
export interface WorkResult {
  ok: boolean
  /** Recorded as the attempt's outcome; default 'succeeded' or 'failed'. */
  outcome?: string
  error?: string | undefined
  /** Default: measured by the runner around the work step. */
  durationMs?: number
  /** Values of the queue's attempt columns. */
  columns?: Readonly<Record<string, unknown>>
}

/** How an attempt ended, as the runner saw it. */
export type Attempted<R extends WorkResult> =
  | { kind: 'done'; result: R }
  /** The work step threw (or rejected): a failed attempt with the error's message. */
  | { kind: 'threw'; error: unknown }
  /** Stopped past the grace: an 'aborted' attempt; the claim was handed back first. */
  | { kind: 'aborted'; error: string }

export interface RunnerLogger {
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

export interface RunnerOptions<S extends string, Id extends JobId, J, R extends WorkResult> {
  db: Database
  queue: JobQueue<S, Id, J>
  /** Attempts held (running or waiting for their group) at most. */
  concurrency: number
  /**
   * Attempts running at once per group (jobs with a group_key); default no limit. The runner holds no
   * more claims of a group than that, plus as many again waiting for its slots while at least two
   * groups' worth of slots stay free after the claim, so a group's backlog beyond them stays unclaimed,
   * for other claimants, and cannot take the slots other groups' jobs are due for.
   */
  perGroup?: number
  /** How long a claim holds a job unrenewed; heartbeats renew it every third of that while it is held. */
  leaseSeconds: number
  /** One attempt. It may throw: the runner records that as a failed attempt. */
  work(claim: Claim<Id, J>, signal: AbortSignal): Promise<R>
  /** Where the job goes after an attempt that ended (not aborted). If it throws, the job is retried a lease later. */
  next(claim: Claim<Id, J>, attempt: Exclude<Attempted<R>, { kind: 'aborted' }>): Next<S>
  /** Sees every attempt as it is recorded (metrics); must not throw, but nothing breaks if it does. */
  observe?(claim: Claim<Id, J>, attempt: Attempted<R>, record: AttemptRecord): void
  /** Told the number of jobs held whenever it changes. */
  onHeld?(held: number): void
  logger: RunnerLogger
  /** Names this runner's claims; a random UUID by default. */
  claimant?: string
  /** Epoch milliseconds: when an attempt started, as recorded. */
  clock?: () => number
  /** The longest the runner waits between looks at the queue, whatever NOTIFY says. Default 1 s. */
  pollMs?: number
  /**
   * Attempts ending within this many ms of the first of a batch are recorded by one statement (where
   * statements cost more than their rows, e.g. many short attempts on PGlite); an attempt waiting for
   * its batch holds no slot of `concurrency`. Default 0: a batch is written at once, and the attempts
   * ending meanwhile make the next.
   */
  recordBatchMs?: number
}

export interface Runner<Id extends JobId = JobId, J = unknown> {
  readonly claimant: string
  /**
   * Looks for due jobs now (a NOTIFY on the queue's channel does this across processes); with ids, the
   * next claim takes those first, even before they are due — one this runner holds, in the first claim
   * after its attempt is recorded.
   */
  wake(ids?: readonly Id[]): void
  /**
   * Works claims made outside the runner's own claims: jobs a statement of the application put in the
   * claimed state under this runner's claimant (e.g. inserted already claimed, to attempt them without a
   * claim statement). They are held, renewed, attempted and recorded like the runner's own, within
   * `concurrency` (the rest wait, still claimed, and stop() hands them back). A fence that is not
   * current gives a stale attempt that moves nothing. Ignored once stopping: such claims fall due when
   * their lease ends.
   */
  adopt(claims: readonly Claim<Id, J>[]): void
  /**
   * Stops claiming, hands back claims not yet attempted, lets attempts in flight finish for up to
   * graceMs, then hands back the rest and aborts them (recorded as 'aborted' attempts that move nothing).
   */
  stop(graceMs: number): Promise<void>
}

const ERROR_BACKOFF_MS = 1000
/** The pause before looking again when the sweep saw a job due now that the claim just missed. */
const DUE_NOW_PAUSE_MS = 50
/** Jobs one sweep moves at most; the next turn sweeps again. */
const SWEEP_LIMIT = 1000
const ABORTED = 'aborted: the runner stopped'

interface Held<Id extends JobId, J> {
  claim: Claim<Id, J>
  /** Made outside the runner's claims (adopt). */
  adopted: boolean
  /** Its work step ended and it waits for its batch (recordBatchMs), holding no slot. */
  unrecorded?: boolean
  abort?: AbortController
  done?: Promise<void>
}

/**
 * Works a queue: claims due jobs in batches (as many as there are free slots), runs each through the
 * work step with at most `concurrency` held and `perGroup` running per group, renews their leases,
 * and records the attempts in batches (one statement per batch) — the work step's exceptions included,
 * so nothing it does escapes the runner, and a group's slot is freed however the attempt ends.
 */
export async function startRunner<S extends string, Id extends JobId, J, R extends WorkResult>(
  options: RunnerOptions<S, Id, J, R>,
): Promise<Runner<Id, J>> {
  const { db, queue, concurrency, leaseSeconds } = options
  const perGroup = options.perGroup ?? Number.POSITIVE_INFINITY
  const claimant = options.claimant ?? randomUUID()
  const clock = options.clock ?? Date.now
  const pollMs = options.pollMs ?? 1000
  const recordBatchMs = options.recordBatchMs ?? 0
  const log = safeLogger(options.logger)
  const machine = queue.spec.machine

  const held = new Map<Id, Held<Id, J>>()
  const waiting = new Map<string, Claim<Id, J>[]>()
  const running = new Map<string, number>()
  /** Adopted claims waiting for room under `concurrency`. */
  const adoptable: Claim<Id, J>[] = []
  /** Held attempts waiting for their batch to be recorded (recordBatchMs): they hold no slot. */
  let unrecordedCount = 0
  const busy = () => held.size - unrecordedCount
  let stopping = false
  /** The loop's last turn found no free slot: an attempt ending must wake it. */
  let starved = false

  const heldChanged = () => {
    try {
      options.onHeld?.(held.size)
    } catch (error) {
      log.warn({ err: error }, 'queue: onHeld threw')
    }
  }

  // `woken` resumes the loop; `stuck` is set when everything due belongs to saturated groups (`stuckOn`),
  // so the loop does not look at the queue after every attempt — only on new work, one of those groups
  // with room again, or the poll (`stuckUntil`).
  let woken = false
  let stuck = false
  /** The saturated groups, each with the number of claims at or below which it has room again. */
  let stuckOn = new Map<string, number>()
  /** The poll still applies while stuck: attempts ending (resume) do not push it back. */
  let stuckUntil = 0
  let interrupt: (() => void) | undefined
  const resume = () => {
    woken = true
    interrupt?.()
  }
  const wake = () => {
    stuck = false
    resume()
  }
  /** Jobs named by wake(ids), for the next claim. */
  let wanted: Id[] = []
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) return resolve()
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        interrupt = undefined
        resolve()
      }
      interrupt = done
    })

  const unlisten = await db.listen(queue.spec.channel, wake)
  const heartbeat = setInterval(
    () => {
      if (held.size === 0) return
      const claims = [...held.values()].map((entry) => entry.claim)
      queue
        .renew(db, claims, leaseSeconds)
        .catch((error: unknown) => log.warn({ err: error }, 'queue: could not renew claims'))
    },
    (leaseSeconds * 1000) / 3,
  )
  heartbeat.unref()

  async function loop(): Promise<void> {
    let sweptAt = Number.NEGATIVE_INFINITY
    while (!stopping) {
      woken = false
      if (stuck && performance.now() >= stuckUntil) stuck = false
      const free = concurrency - busy()
      starved = free <= 0
      let idleMs = pollMs
      if (free > 0 && !stuck) {
        try {
          // A group holding its share gets no more until it has room again, so that one slow group's
          // backlog cannot take the slots other groups' jobs are due for. Claims waiting for their group's
          // slots save a round trip when a slot frees; they are taken only while two groups' worth of
          // slots stay free, one of them kept free by this claim.
          const lookahead = Math.min(perGroup, Math.max(0, free - 2 * perGroup))
          const hold = perGroup + lookahead
          const limit = lookahead > 0 ? free - perGroup : free
          const heldByGroup = groupsHeld()
          const excludeGroups = [...heldByGroup].filter(([, n]) => n >= hold).map(([key]) => key)
          // A named job this runner still holds is named again once its attempt is recorded.
          const ids = wanted.filter((id) => !held.has(id))
          wanted = wanted.filter((id) => held.has(id))
          const claims = await queue.claim(db, {
            claimant,
            limit,
            leaseSeconds,
            excludeGroups,
            perGroup: hold,
            heldByGroup,
            ids,
          })
          for (const claim of claims) take(claim)
          // A group given all its room may have hidden other groups' jobs from this claim, and may have more.
          const full = claims.length === limit || filledTheirRoom(claims, hold, heldByGroup)
          if (full && performance.now() - sweptAt < pollMs) continue
          const { moved, nextDueSeconds } = await queue.sweep(db, SWEEP_LIMIT)
          sweptAt = performance.now()
          if (full || moved > 0) continue
          // (Unless something woke us meanwhile: then what was busy may have freed up.)
          if (nextDueSeconds === 0 && excludeGroups.length > 0 && !woken) {
            // Unless one of them had room again by the time the claim and the sweep were done (its wake-up
            // not sent, as the loop was not stuck yet).
            const roomAgain = new Map(
              excludeGroups.map((key) => [key, roomAgainAt(heldByGroup.get(key) ?? 0)]),
            )
            if ([...roomAgain].some(([key, at]) => inGroup(key) <= at)) continue
            stuck = true
            stuckOn = roomAgain
            stuckUntil = performance.now() + pollMs
          } else if (nextDueSeconds !== undefined) {
            // Due now, yet not claimed: it fell due between the claim and the sweep (or a claim elsewhere
            // holds it for a moment). Look again shortly rather than a whole poll later.
            idleMs = Math.min(idleMs, nextDueSeconds > 0 ? nextDueSeconds * 1000 : DUE_NOW_PAUSE_MS)
          }
        } catch (error) {
          if (stopping) break
          log.error({ err: error }, 'queue: claiming jobs failed')
          idleMs = ERROR_BACKOFF_MS
        }
      }
      await sleep(stuck ? stuckUntil - performance.now() : idleMs)
    }
  }

  // Claims wait here for a slot of their group; jobs without a group share the key '' and no limit.
  const slotKey = (claim: Claim<Id, J>) => claim.group ?? ''
  const limitOf = (key: string) => (key === '' ? Number.POSITIVE_INFINITY : perGroup)

  function take(claim: Claim<Id, J>, adopted = false): void {
    held.set(claim.id, { claim, adopted })
    heldChanged()
    const key = slotKey(claim)
    const queued = waiting.get(key)
    if (queued) queued.push(claim)
    else waiting.set(key, [claim])
    pump(key)
  }

  function pump(key: string): void {
    const queued = waiting.get(key)
    while (!stopping && queued && queued.length > 0 && (running.get(key) ?? 0) < limitOf(key)) {
      start(queued.shift() as Claim<Id, J>)
    }
    if (queued?.length === 0) waiting.delete(key)
  }

  function takeAdopted(): void {
    while (!stopping && adoptable.length > 0 && busy() < concurrency) {
      const claim = adoptable.shift() as Claim<Id, J>
      if (!held.has(claim.id)) take(claim, true)
    }
  }

  function start(claim: Claim<Id, J>): void {
    const entry = held.get(claim.id) as Held<Id, J>
    const key = slotKey(claim)
    running.set(key, (running.get(key) ?? 0) + 1)
    entry.abort = new AbortController()
    let readyAgain = false
    entry.done = attempt(claim, entry.abort.signal)
      .then(
        (ready) => {
          readyAgain = ready
        },
        (error: unknown) => log.error({ err: error }, 'queue: attempt bookkeeping failed'),
      )
      .finally(() => {
        if (entry.unrecorded) unrecordedCount--
        held.delete(claim.id)
        heldChanged()
        takeAdopted()
        // Claim again once half the slots are free: one claim per batch, not per finished attempt. An
        // adopted claim's end costs a look at the queue only when it put its job back (a retry, which
        // the loop must schedule) or the loop waits for a slot.
        const half = busy() <= concurrency / 2
        if (wanted.includes(claim.id) || (entry.adopted ? readyAgain || (starved && half) : half)) resume()
      })
  }

  /** A group's claims whose attempt has not ended: running, or waiting for one of its slots. */
  const inGroup = (key: string) => (running.get(key) ?? 0) + (waiting.get(key)?.length ?? 0)
  function groupsHeld(): Map<string, number> {
    const keys = new Set([...running.keys(), ...waiting.keys()])
    keys.delete('')
    return new Map([...keys].map((key) => [key, inGroup(key)]))
  }

  /**
   * A saturated group holding `held` claims has room again at this many: once its waiting claims have
   * all started (it held some), or at half its slots (it held none waiting), so a claim takes a batch.
   */
  const roomAgainAt = (held: number) => (held > perGroup ? perGroup : perGroup / 2)

  /** Whether the claim took, for some group, as many jobs as that group had room for. */
  function filledTheirRoom(
    claims: readonly Claim<Id, J>[],
    hold: number,
    heldBefore: ReadonlyMap<string, number>,
  ): boolean {
    const taken = new Map<string, number>()
    for (const claim of claims) {
      const key = slotKey(claim)
      if (key !== '') taken.set(key, (taken.get(key) ?? 0) + 1)
    }
    return [...taken].some(([key, n]) => n >= hold - (heldBefore.get(key) ?? 0))
  }

  function freeSlot(key: string): void {
    const left = (running.get(key) ?? 1) - 1
    if (left === 0) running.delete(key)
    else running.set(key, left)
    pump(key)
    // A saturated group with room again: the jobs of it the loop left out can be claimed, a batch at a time.
    const at = stuckOn.get(key)
    if (stuck && !stopping && at !== undefined && inGroup(key) <= at) wake()
  }

  /**
   * Runs the work step, frees the group's slot as soon as it ends, then records the attempt (batched);
   * true when the job went back to the ready state.
   */
  async function attempt(claim: Claim<Id, J>, signal: AbortSignal): Promise<boolean> {
    const startedAt = clock()
    const began = performance.now()
    let attempted: Attempted<R>
    try {
      const result = await options.work(claim, signal)
      attempted =
        signal.aborted && !result.ok
          ? { kind: 'aborted', error: result.error ?? ABORTED }
          : { kind: 'done', result }
    } catch (error) {
      attempted = signal.aborted ? { kind: 'aborted', error: messageOf(error) } : { kind: 'threw', error }
    } finally {
      freeSlot(slotKey(claim))
    }
    if (recordBatchMs > 0) {
      // Its slot is free while it waits for its batch.
      const entry = held.get(claim.id)
      if (entry) {
        entry.unrecorded = true
        unrecordedCount++
        takeAdopted()
      }
    }
    const durationMs = performance.now() - began
    const record = recordOf(attempted, startedAt, durationMs)
    try {
      options.observe?.(claim, attempted, record)
    } catch (error) {
      log.warn({ err: error }, 'queue: observe threw')
    }
    const next = nextOf(claim, attempted)
    await recordAttempt({ id: claim.id, fence: claim.fence, attempt: record, next })
    return next.state === machine.ready
  }

  function recordOf(attempted: Attempted<R>, startedAt: number, durationMs: number): AttemptRecord {
    switch (attempted.kind) {
      case 'done': {
        const { result } = attempted
        return {
          outcome: result.outcome ?? (result.ok ? 'succeeded' : 'failed'),
          startedAt,
          durationMs: result.durationMs ?? durationMs,
          error: result.error,
          columns: result.columns,
        }
      }
      case 'threw':
        return { outcome: 'failed', startedAt, durationMs, error: messageOf(attempted.error) }
      case 'aborted':
        return { outcome: 'aborted', startedAt, durationMs, error: attempted.error }
    }
  }

  function nextOf(claim: Claim<Id, J>, attempted: Attempted<R>): Next<S> {
    // Aborted: its claim was handed back already; should that have failed, hand it back now.
    if (attempted.kind === 'aborted') return { state: machine.ready }
    try {
      const next = options.next(claim, attempted)
      const problem = nextProblem(machine, next)
      if (problem === undefined) return next
      log.error({ id: claim.id, state: next.state }, `queue: next() is wrong: ${problem}`)
    } catch (error) {
      log.error({ err: error, id: claim.id }, 'queue: next() threw')
    }
    return { state: machine.ready, delaySeconds: leaseSeconds }
  }

  // Attempts finishing while a batch is being written go into the next batch: one statement per
  // batch instead of one per attempt, without waiting on a timer.
  let unrecorded: { settlement: Settlement<S, Id>; recorded: () => void }[] = []
  let recording = false
  function recordAttempt(settlement: Settlement<S, Id>): Promise<void> {
    return new Promise((recorded) => {
      unrecorded.push({ settlement, recorded })
      if (!recording) void flush()
    })
  }
  async function flush(): Promise<void> {
    recording = true
    while (unrecorded.length > 0) {
      if (recordBatchMs > 0) await new Promise((resolve) => setTimeout(resolve, recordBatchMs))
      const batch = unrecorded
      unrecorded = []
      try {
        await queue.settle(
          db,
          batch.map((entry) => entry.settlement),
        )
      } catch (error) {
        // The claims' leases run out and the jobs are attempted again: at least once, never lost.
        log.error({ err: error, attempts: batch.length }, 'queue: could not record attempts')
      }
      for (const entry of batch) entry.recorded()
    }
    recording = false
  }

  const looping = loop().catch((error: unknown) => log.error({ err: error }, 'queue: the claim loop failed'))

  const handBack = async (claims: readonly ClaimRef<Id>[], what: string) => {
    try {
      await queue.release(db, claims)
    } catch (error) {
      log.warn({ err: error }, `queue: could not hand back ${what}`)
    }
  }

  let stopped: Promise<void> | undefined
  return {
    claimant,
    wake(ids) {
      if (ids) wanted.push(...ids)
      wake()
    },
    adopt(claims) {
      if (stopping) return
      adoptable.push(...claims)
      takeAdopted()
    },
    stop(graceMs) {
      stopped ??= (async () => {
        stopping = true
        wake()
        await looping
        const queued = [...waiting.values()].flat()
        waiting.clear()
        for (const claim of queued) held.delete(claim.id)
        heldChanged()
        await handBack([...queued, ...adoptable.splice(0)], 'claims waiting for a slot')
        const inFlight = [...held.values()]
        const settled = Promise.all(inFlight.map((entry) => entry.done))
        let timer: NodeJS.Timeout | undefined
        const graceOver = new Promise<'grace over'>((resolve) => {
          timer = setTimeout(() => resolve('grace over'), graceMs)
        })
        if ((await Promise.race([settled, graceOver])) === 'grace over') {
          // Handed back first, so the aborted attempts are recorded without moving their jobs.
          await handBack(
            inFlight.map((entry) => entry.claim),
            'claims in flight',
          )
          for (const entry of inFlight) entry.abort?.abort()
          await settled
        }
        clearTimeout(timer)
        clearInterval(heartbeat)
        await unlisten().catch((error: unknown) =>
          log.warn({ err: error }, 'queue: could not stop listening'),
        )
      })()
      return stopped
    },
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** A logger whose own failures cannot escape into the runner. */
function safeLogger(logger: RunnerLogger): RunnerLogger {
  const guard =
    (write: (details: object, message: string) => void) =>
    (details: object, message: string): void => {
      try {
        write.call(logger, details, message)
      } catch {
        // Nothing left to tell it to.
      }
    }
  return { warn: guard(logger.warn), error: guard(logger.error) }
}
