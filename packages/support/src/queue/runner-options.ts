import type { Logger } from '../logger.js'
import type { Database } from '../storage/database.js'
import type { AttemptRecord, Claim, JobId, JobQueue, Next } from './job-queue.js'

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

export type RunnerLogger = Pick<Logger, 'warn' | 'error'>

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
