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
export {
  type Attempted,
  type Runner,
  type RunnerLogger,
  type RunnerOptions,
  startRunner,
  type WorkResult,
} from './runner.js'
export {
  defineQueueMachine,
  dueCheckSql,
  ILLEGAL_TRANSITION_SQLSTATE,
  IllegalTransitionError,
  isIllegalTransition,
  type QueueMachine,
  type QueueMachineDefinition,
  sqlList,
  stateCheckSql,
  type Transition,
  transitionGuardSql,
} from './state-machine.js'
