export {
  type AttemptColumn,
  type AttemptInput,
  type AttemptRecord,
  type Claim,
  type ClaimOptions,
  type ClaimRef,
  defineQueue,
  type Fence,
  type JobId,
  type JobQueue,
  MAX_ERROR_LENGTH,
  type Next,
  nextProblem,
  type QueueSpec,
  type Settlement,
} from './job-queue.js'
export { type RetryOptions, retryDelay } from './retry.js'
export { startRunner } from './runner.js'
export type { Attempted, Runner, RunnerLogger, RunnerOptions, WorkResult } from './runner-options.js'
export {
  defineQueueMachine,
  dueCheckSql,
  dueIndexSql,
  groupIndexesSql,
  ILLEGAL_TRANSITION_SQLSTATE,
  IllegalTransitionError,
  isIllegalTransition,
  type QueueMachine,
  type QueueMachineDefinition,
  sqlList,
  stateCheckSql,
  sweepIndexSql,
  type Transition,
  transitionGuardSql,
} from './state-machine.js'
