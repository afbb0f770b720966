import { type AttemptRecord, type Claim, type JobId, type Next, nextProblem } from './job-queue.js'
import type { Attempted, RunnerLogger, RunnerOptions, WorkResult } from './runner-options.js'
import type { QueueMachine } from './state-machine.js'

export const ABORTED = 'aborted: the runner stopped'

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** Runs the work step; how it ended, its exceptions included (nothing it does escapes the runner). */
export async function runWork<Id extends JobId, J, R extends WorkResult>(
  work: RunnerOptions<string, Id, J, R>['work'],
  claim: Claim<Id, J>,
  signal: AbortSignal,
): Promise<Attempted<R>> {
  try {
    const result = await work(claim, signal)
    return signal.aborted && !result.ok
      ? { kind: 'aborted', error: result.error ?? ABORTED }
      : { kind: 'done', result }
  } catch (error) {
    return signal.aborted ? { kind: 'aborted', error: messageOf(error) } : { kind: 'threw', error }
  }
}

/** The attempt as the queue records it. */
export function recordOf<R extends WorkResult>(
  attempted: Attempted<R>,
  startedAt: number,
  durationMs: number,
): AttemptRecord {
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

/**
 * Where the job goes after its attempt: the application's next(), checked against the machine; when it is
 * wrong or throws, the job is retried a lease later. An aborted attempt's claim was handed back already;
 * should that have failed, it is handed back now.
 */
export function nextOf<S extends string, Id extends JobId, J, R extends WorkResult>(
  options: Pick<RunnerOptions<S, Id, J, R>, 'next' | 'leaseSeconds'> & {
    machine: QueueMachine<S>
    log: RunnerLogger
  },
  claim: Claim<Id, J>,
  attempted: Attempted<R>,
): Next<S> {
  const { machine, log } = options
  if (attempted.kind === 'aborted') return { state: machine.ready }
  try {
    const next = options.next(claim, attempted)
    const problem = nextProblem(machine, next)
    if (problem === undefined) return next
    log.error({ id: claim.id, state: next.state }, `queue: next() is wrong: ${problem}`)
  } catch (error) {
    log.error({ err: error, id: claim.id }, 'queue: next() threw')
  }
  return { state: machine.ready, delaySeconds: options.leaseSeconds }
}
