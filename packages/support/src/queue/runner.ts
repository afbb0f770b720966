import { randomUUID } from 'node:crypto'
import type { Database } from '../storage/database.js'
import { nextOf, recordOf, runWork } from './attempt-outcome.js'
import { AttemptRecorder } from './attempt-recorder.js'
import { GroupSlots } from './group-slots.js'
import type { Claim, ClaimRef, JobId, JobQueue } from './job-queue.js'
import type { Attempted, Runner, RunnerLogger, RunnerOptions, WorkResult } from './runner-options.js'

const ERROR_BACKOFF_MS = 1000
/** The pause before looking again when the sweep saw a job due now that the claim just missed. */
const DUE_NOW_PAUSE_MS = 50
/** Jobs one sweep moves at most; the next turn sweeps again. */
const SWEEP_LIMIT = 1000
/** What a turn of the claim loop returns when the loop must look again at once. */
const AGAIN = 'again'

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
  const runner = new QueueRunner(options)
  await runner.listen()
  return runner
}

class QueueRunner<S extends string, Id extends JobId, J, R extends WorkResult> implements Runner<Id, J> {
  readonly claimant: string
  readonly #options: RunnerOptions<S, Id, J, R>
  readonly #db: Database
  readonly #queue: JobQueue<S, Id, J>
  readonly #pollMs: number
  readonly #clock: () => number
  readonly #log: RunnerLogger
  readonly #slots: GroupSlots<Id, J>
  readonly #recorder: AttemptRecorder<S, Id>

  /** Every claim held: running, waiting for its group's slot, or waiting for its attempt to be recorded. */
  readonly #held = new Map<Id, Held<Id, J>>()
  /** Adopted claims waiting for room under `concurrency`. */
  readonly #adoptable: Claim<Id, J>[] = []
  /** Held attempts waiting for their batch to be recorded (recordBatchMs): they hold no slot. */
  #unrecordedCount = 0
  /** Jobs named by wake(ids), for the next claim. */
  #wanted: Id[] = []
  #stopping = false
  /** The loop's last turn found no free slot: an attempt ending must wake it. */
  #starved = false
  /** Set by wake-ups: the loop does not sleep before looking again. */
  #woken = false
  #interrupt: (() => void) | undefined
  // `stuck` is set when everything due belongs to saturated groups (`stuckOn`), so the loop does not look
  // at the queue after every attempt — only on new work, one of those groups with room again, or the poll.
  #stuck = false
  /** The saturated groups, each with the number of claims at or below which it has room again. */
  #stuckOn = new Map<string, number>()
  /** The poll still applies while stuck: attempts ending (resume) do not push it back. */
  #stuckUntil = 0
  #sweptAt = Number.NEGATIVE_INFINITY
  #looping: Promise<void> | undefined
  #heartbeat: NodeJS.Timeout | undefined
  #unlisten: (() => Promise<void>) | undefined
  #stopped: Promise<void> | undefined

  constructor(options: RunnerOptions<S, Id, J, R>) {
    this.#options = options
    this.#db = options.db
    this.#queue = options.queue
    this.claimant = options.claimant ?? randomUUID()
    this.#clock = options.clock ?? Date.now
    this.#pollMs = options.pollMs ?? 1000
    this.#log = safeLogger(options.logger)
    this.#slots = new GroupSlots<Id, J>(
      options.perGroup ?? Number.POSITIVE_INFINITY,
      (claim) => this.#start(claim),
      () => this.#stopping,
    )
    this.#recorder = new AttemptRecorder(this.#db, this.#queue, options.recordBatchMs ?? 0, this.#log)
  }

  /** Listens for the queue's NOTIFY, renews what it holds every third of a lease, and starts claiming. */
  async listen(): Promise<void> {
    const { leaseSeconds } = this.#options
    this.#unlisten = await this.#db.listen(this.#queue.spec.channel, () => this.#wake())
    this.#heartbeat = setInterval(() => this.#renew(), (leaseSeconds * 1000) / 3)
    this.#heartbeat.unref()
    this.#looping = this.#loop().catch((error: unknown) =>
      this.#log.error({ err: error }, 'queue: the claim loop failed'),
    )
  }

  wake(ids?: readonly Id[]): void {
    if (ids) this.#wanted.push(...ids)
    this.#wake()
  }

  adopt(claims: readonly Claim<Id, J>[]): void {
    if (this.#stopping) return
    this.#adoptable.push(...claims)
    this.#takeAdopted()
  }

  stop(graceMs: number): Promise<void> {
    this.#stopped ??= this.#stop(graceMs)
    return this.#stopped
  }

  #busy(): number {
    return this.#held.size - this.#unrecordedCount
  }

  #heldChanged(): void {
    try {
      this.#options.onHeld?.(this.#held.size)
    } catch (error) {
      this.#log.warn({ err: error }, 'queue: onHeld threw')
    }
  }

  #renew(): void {
    if (this.#held.size === 0) return
    const claims = [...this.#held.values()].map((entry) => entry.claim)
    this.#queue
      .renew(this.#db, claims, this.#options.leaseSeconds)
      .catch((error: unknown) => this.#log.warn({ err: error }, 'queue: could not renew claims'))
  }

  #resume(): void {
    this.#woken = true
    this.#interrupt?.()
  }

  #wake(): void {
    this.#stuck = false
    this.#resume()
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.#woken) return resolve()
      const done = () => {
        clearTimeout(timer)
        this.#interrupt = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#interrupt = done
    })
  }

  async #loop(): Promise<void> {
    while (!this.#stopping) {
      this.#woken = false
      if (this.#stuck && performance.now() >= this.#stuckUntil) this.#stuck = false
      const free = this.#options.concurrency - this.#busy()
      this.#starved = free <= 0
      let idleMs = this.#pollMs
      if (free > 0 && !this.#stuck) {
        try {
          const turn = await this.#claimTurn(free)
          if (turn === AGAIN) continue
          idleMs = turn
        } catch (error) {
          if (this.#stopping) break
          this.#log.error({ err: error }, 'queue: claiming jobs failed')
          idleMs = ERROR_BACKOFF_MS
        }
      }
      await this.#sleep(this.#stuck ? this.#stuckUntil - performance.now() : idleMs)
    }
  }

  /**
   * One claim of up to `free` due jobs, then a sweep; AGAIN when the loop must look again at once, or how
   * long it may sleep. A group holding its share gets no more until it has room again, so that one slow
   * group's backlog cannot take the slots other groups' jobs are due for. Claims waiting for their group's
   * slots save a round trip when a slot frees; they are taken only while two groups' worth of slots stay
   * free, one of them kept free by this claim.
   */
  async #claimTurn(free: number): Promise<number | typeof AGAIN> {
    const { perGroup } = this.#slots
    const lookahead = Math.min(perGroup, Math.max(0, free - 2 * perGroup))
    const hold = perGroup + lookahead
    const limit = lookahead > 0 ? free - perGroup : free
    const heldByGroup = this.#slots.heldByGroup()
    const excludeGroups = [...heldByGroup].filter(([, n]) => n >= hold).map(([key]) => key)
    // A named job this runner still holds is named again once its attempt is recorded.
    const ids = this.#wanted.filter((id) => !this.#held.has(id))
    this.#wanted = this.#wanted.filter((id) => this.#held.has(id))
    const claims = await this.#queue.claim(this.#db, {
      claimant: this.claimant,
      limit,
      leaseSeconds: this.#options.leaseSeconds,
      excludeGroups,
      perGroup: hold,
      heldByGroup,
      ids,
    })
    for (const claim of claims) this.#take(claim)
    // A group given all its room may have hidden other groups' jobs from this claim, and may have more.
    const full = claims.length === limit || this.#slots.filledTheirRoom(claims, hold, heldByGroup)
    if (full && performance.now() - this.#sweptAt < this.#pollMs) return AGAIN
    const { moved, nextDueSeconds } = await this.#queue.sweep(this.#db, SWEEP_LIMIT)
    this.#sweptAt = performance.now()
    if (full || moved > 0) return AGAIN
    // (Unless something woke us meanwhile: then what was busy may have freed up.)
    if (nextDueSeconds === 0 && excludeGroups.length > 0 && !this.#woken) {
      // Unless one of them had room again by the time the claim and the sweep were done (its wake-up not
      // sent, as the loop was not stuck yet).
      const roomAgain = new Map(
        excludeGroups.map((key) => [key, this.#slots.roomAgainAt(heldByGroup.get(key) ?? 0)]),
      )
      if ([...roomAgain].some(([key, at]) => this.#slots.inGroup(key) <= at)) return AGAIN
      this.#stuck = true
      this.#stuckOn = roomAgain
      this.#stuckUntil = performance.now() + this.#pollMs
    } else if (nextDueSeconds !== undefined) {
      // Due now, yet not claimed: it fell due between the claim and the sweep (or a claim elsewhere holds
      // it for a moment). Look again shortly rather than a whole poll later.
      return Math.min(this.#pollMs, nextDueSeconds > 0 ? nextDueSeconds * 1000 : DUE_NOW_PAUSE_MS)
    }
    return this.#pollMs
  }

  #take(claim: Claim<Id, J>, adopted = false): void {
    this.#held.set(claim.id, { claim, adopted })
    this.#heldChanged()
    this.#slots.enqueue(claim)
  }

  #takeAdopted(): void {
    while (!this.#stopping && this.#adoptable.length > 0 && this.#busy() < this.#options.concurrency) {
      const claim = this.#adoptable.shift() as Claim<Id, J>
      if (!this.#held.has(claim.id)) this.#take(claim, true)
    }
  }

  /** Starts a claim's attempt (its group's slot taken); once recorded, the claim is let go. */
  #start(claim: Claim<Id, J>): void {
    const entry = this.#held.get(claim.id) as Held<Id, J>
    this.#slots.occupy(claim)
    entry.abort = new AbortController()
    let readyAgain = false
    entry.done = this.#attempt(claim, entry.abort.signal)
      .then(
        (ready) => {
          readyAgain = ready
        },
        (error: unknown) => this.#log.error({ err: error }, 'queue: attempt bookkeeping failed'),
      )
      .finally(() => {
        if (entry.unrecorded) this.#unrecordedCount--
        this.#held.delete(claim.id)
        this.#heldChanged()
        this.#takeAdopted()
        // Claim again once half the slots are free: one claim per batch, not per finished attempt. An
        // adopted claim's end costs a look at the queue only when it put its job back (a retry, which
        // the loop must schedule) or the loop waits for a slot.
        const half = this.#busy() <= this.#options.concurrency / 2
        const look = entry.adopted ? readyAgain || (this.#starved && half) : half
        if (this.#wanted.includes(claim.id) || look) this.#resume()
      })
  }

  /**
   * Runs the work step, frees the group's slot as soon as it ends, then records the attempt (batched);
   * true when the job went back to the ready state.
   */
  async #attempt(claim: Claim<Id, J>, signal: AbortSignal): Promise<boolean> {
    const startedAt = this.#clock()
    const began = performance.now()
    let attempted: Attempted<R>
    try {
      attempted = await runWork(this.#options.work, claim, signal)
    } finally {
      this.#freeSlot(GroupSlots.keyOf(claim))
    }
    if ((this.#options.recordBatchMs ?? 0) > 0) {
      // Its slot is free while it waits for its batch.
      const entry = this.#held.get(claim.id)
      if (entry) {
        entry.unrecorded = true
        this.#unrecordedCount++
        this.#takeAdopted()
      }
    }
    const record = recordOf(attempted, startedAt, performance.now() - began)
    try {
      this.#options.observe?.(claim, attempted, record)
    } catch (error) {
      this.#log.warn({ err: error }, 'queue: observe threw')
    }
    const machine = this.#queue.spec.machine
    const next = nextOf({ ...this.#options, machine, log: this.#log }, claim, attempted)
    await this.#recorder.record({ id: claim.id, fence: claim.fence, attempt: record, next })
    return next.state === machine.ready
  }

  #freeSlot(key: string): void {
    this.#slots.free(key)
    // A saturated group with room again: the jobs of it the loop left out can be claimed, a batch at a time.
    const at = this.#stuckOn.get(key)
    if (this.#stuck && !this.#stopping && at !== undefined && this.#slots.inGroup(key) <= at) this.#wake()
  }

  async #handBack(claims: readonly ClaimRef<Id>[], what: string): Promise<void> {
    try {
      await this.#queue.release(this.#db, claims)
    } catch (error) {
      this.#log.warn({ err: error }, `queue: could not hand back ${what}`)
    }
  }

  async #stop(graceMs: number): Promise<void> {
    this.#stopping = true
    this.#wake()
    await this.#looping
    const queued = this.#slots.drainWaiting()
    for (const claim of queued) this.#held.delete(claim.id)
    this.#heldChanged()
    await this.#handBack([...queued, ...this.#adoptable.splice(0)], 'claims waiting for a slot')
    const inFlight = [...this.#held.values()]
    const settled = Promise.all(inFlight.map((entry) => entry.done))
    let timer: NodeJS.Timeout | undefined
    const graceOver = new Promise<'grace over'>((resolve) => {
      timer = setTimeout(() => resolve('grace over'), graceMs)
    })
    if ((await Promise.race([settled, graceOver])) === 'grace over') {
      // Handed back first, so the aborted attempts are recorded without moving their jobs.
      await this.#handBack(
        inFlight.map((entry) => entry.claim),
        'claims in flight',
      )
      for (const entry of inFlight) entry.abort?.abort()
      await settled
    }
    clearTimeout(timer)
    clearInterval(this.#heartbeat)
    await this.#unlisten?.().catch((error: unknown) =>
      this.#log.warn({ err: error }, 'queue: could not stop listening'),
    )
  }
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
