import type { Database } from '../storage/database.js'
import type { JobId, JobQueue, Settlement } from './job-queue.js'
import type { RunnerLogger } from './runner-options.js'

/** Writes of a batch at most, when PostgreSQL cancels it to break a deadlock. */
const MAX_TRIES = 3

/**
 * Records ended attempts in batches: the attempts ending while a batch is being written go into the next
 * one, so there is one statement per batch rather than one per attempt, without waiting on a timer
 * (unless batchMs asks for it).
 */
export class AttemptRecorder<S extends string, Id extends JobId> {
  #unrecorded: { settlement: Settlement<S, Id>; recorded: () => void }[] = []
  #recording = false

  constructor(
    private readonly db: Database,
    private readonly queue: JobQueue<S, Id, unknown>,
    private readonly batchMs: number,
    private readonly log: RunnerLogger,
  ) {}

  /** Resolves once the batch holding this settlement was written (or failed to be: the lease then ends). */
  record(settlement: Settlement<S, Id>): Promise<void> {
    return new Promise((recorded) => {
      this.#unrecorded.push({ settlement, recorded })
      if (!this.#recording) void this.#flush()
    })
  }

  async #flush(): Promise<void> {
    this.#recording = true
    while (this.#unrecorded.length > 0) {
      if (this.batchMs > 0) await new Promise((resolve) => setTimeout(resolve, this.batchMs))
      const batch = this.#unrecorded
      this.#unrecorded = []
      try {
        await this.#settle(batch.map((entry) => entry.settlement))
      } catch (error) {
        // The claims' leases run out and the jobs are attempted again: at least once, never lost.
        this.log.error({ err: error, attempts: batch.length }, 'queue: could not record attempts')
      }
      for (const entry of batch) entry.recorded()
    }
    this.#recording = false
  }

  /**
   * A batch cancelled as a deadlock's or serialization's victim is written again: the statement is fenced
   * by each claim's number, so an attempt whose claim was taken back meanwhile is then recorded stale, never
   * moved twice.
   */
  async #settle(settlements: Settlement<S, Id>[]): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        await this.queue.settle(this.db, settlements)
        return
      } catch (error) {
        const code = (error as { code?: string }).code
        if (tries >= MAX_TRIES || (code !== '40P01' && code !== '40001')) throw error
      }
    }
  }
}
