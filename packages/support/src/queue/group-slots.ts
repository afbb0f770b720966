import type { Claim, JobId } from './job-queue.js'

/**
 * The runner's slots per group: at most perGroup attempts of a group run at once, the group's other claims
 * wait here for one of its slots. Jobs without a group share the key '' and no limit.
 */
export class GroupSlots<Id extends JobId, J> {
  readonly #waiting = new Map<string, Claim<Id, J>[]>()
  readonly #running = new Map<string, number>()

  constructor(
    readonly perGroup: number,
    /** Starts a claim's attempt, now that it has a slot. */
    private readonly start: (claim: Claim<Id, J>) => void,
    private readonly stopping: () => boolean,
  ) {}

  static keyOf(claim: Claim<JobId, unknown>): string {
    return claim.group ?? ''
  }

  #limitOf(key: string): number {
    return key === '' ? Number.POSITIVE_INFINITY : this.perGroup
  }

  /** Queues a claim for a slot of its group, and starts what may start. */
  enqueue(claim: Claim<Id, J>): void {
    const key = GroupSlots.keyOf(claim)
    const queued = this.#waiting.get(key)
    if (queued) queued.push(claim)
    else this.#waiting.set(key, [claim])
    this.#pump(key)
  }

  /** Takes a slot for a claim starting now. */
  occupy(claim: Claim<Id, J>): void {
    const key = GroupSlots.keyOf(claim)
    this.#running.set(key, (this.#running.get(key) ?? 0) + 1)
  }

  /** An attempt of the group ended: its slot goes to the next claim waiting for one. */
  free(key: string): void {
    const left = (this.#running.get(key) ?? 1) - 1
    if (left === 0) this.#running.delete(key)
    else this.#running.set(key, left)
    this.#pump(key)
  }

  #pump(key: string): void {
    const queued = this.#waiting.get(key)
    while (
      !this.stopping() &&
      queued &&
      queued.length > 0 &&
      (this.#running.get(key) ?? 0) < this.#limitOf(key)
    ) {
      this.start(queued.shift() as Claim<Id, J>)
    }
    if (queued?.length === 0) this.#waiting.delete(key)
  }

  /** A group's claims whose attempt has not ended: running, or waiting for one of its slots. */
  inGroup(key: string): number {
    return (this.#running.get(key) ?? 0) + (this.#waiting.get(key)?.length ?? 0)
  }

  /** Every group's claims not ended (jobs without a group left out). */
  heldByGroup(): Map<string, number> {
    const keys = new Set([...this.#running.keys(), ...this.#waiting.keys()])
    keys.delete('')
    return new Map([...keys].map((key) => [key, this.inGroup(key)]))
  }

  /**
   * A saturated group holding `held` claims has room again at this many: once its waiting claims have
   * all started (it held some), or at half its slots (it held none waiting), so a claim takes a batch.
   */
  roomAgainAt(held: number): number {
    return held > this.perGroup ? this.perGroup : this.perGroup / 2
  }

  /** Whether the claim took, for some group, as many jobs as that group had room for. */
  filledTheirRoom(
    claims: readonly Claim<Id, J>[],
    hold: number,
    heldBefore: ReadonlyMap<string, number>,
  ): boolean {
    const taken = new Map<string, number>()
    for (const claim of claims) {
      const key = GroupSlots.keyOf(claim)
      if (key !== '') taken.set(key, (taken.get(key) ?? 0) + 1)
    }
    return [...taken].some(([key, n]) => n >= hold - (heldBefore.get(key) ?? 0))
  }

  /** Every claim still waiting for a slot, taken out (stopping: they are handed back). */
  drainWaiting(): Claim<Id, J>[] {
    const queued = [...this.#waiting.values()].flat()
    this.#waiting.clear()
    return queued
  }
}
