import { randomBytes } from 'node:crypto'
import { PushEventType, ResponseCode } from '@earshot/protocol'
import {
  type Attempted,
  type Claim,
  type Next,
  type RunnerLogger,
  retryDelay,
  startRunner,
  type WorkResult,
} from '@earshot/support/queue'
import { EarshotApiError, EarshotConfigError } from '../client/errors.js'
import { chosenLogger, type LoggerOptions, type ReceiverLogger } from '../logging/receiver-logger.js'
import { type Database, openDatabase } from '../storage/database.js'
import { type Admission, Admissions, type ReceivedEvent } from './admissions.js'
import {
  type CallbackJob,
  type CallbackState,
  callbackQueue,
  forgetExpiredNonces,
  handBackHeld,
  listCallbacks,
  type ReceiptCallback,
  releaseAll,
  type StoredState,
} from './outbox-store.js'
import { createOutboxSchema } from './schema.js'

export type { Admission, CallbackState, ReceiptCallback, ReceivedEvent }

/**
 * Sends one receipt callback, with `erased: true` when `options.erased` (an erasure confirmation);
 * resolves when the platform confirmed it (code 2000).
 */
export type ConfirmReceipt = (
  audioId: string,
  options: { signal: AbortSignal; erased: boolean },
) => Promise<void>

export interface CallbackOutboxOptions extends LoggerOptions {
  /** PGlite data directory; undefined (and no databaseUrl or database) keeps everything in memory. */
  dataDir?: string | undefined
  /** PostgreSQL connection URL: any number of receivers may share it. */
  databaseUrl?: string | undefined
  /** A database opened by the caller (e.g. to store recordings beside the outbox); not closed by close(). */
  database?: Database | undefined
  /**
   * The receipt callback, e.g. `(audioId, options) => client.confirmReceipt(audioId, options)`: pass
   * `options.erased` on, or the erasures of deleted recordings are never confirmed.
   */
  confirm: ConfirmReceipt
  /**
   * Delays in ms after the 1st, 2nd, ... failed attempt; the last one repeats for ever. Default 0.5 s
   * doubling to 60 s. Each delay gets ±10% jitter.
   */
  retrySchedule?: readonly number[] | undefined
  /** One attempt is abandoned (and retried) after this long. Default 30 s. */
  attemptTimeoutMs?: number | undefined
  /** Callbacks sent at once. Default 16. */
  concurrency?: number | undefined
  /**
   * A callback recorded with its push waits for wake(eventId), which the receiver calls once the answer
   * went out. Without it, the callback is sent anyway this long (plus attemptTimeoutMs) after it was
   * recorded. Default 10 s (the platform's ack timeout).
   */
  answerGraceMs?: number | undefined
  /** How long an accepted envelope nonce is refused again. Default 7 days. */
  replayWindowMs?: number | undefined
  /** Pending callbacks are looked for at least this often (others sharing the database add some). Default 5 s. */
  pollIntervalMs?: number | undefined
  /** close() waits this long for callbacks in flight before abandoning them (they stay pending). Default 5 s. */
  closeTimeoutMs?: number | undefined
  /** Epoch milliseconds; tests inject one they can move. */
  clock?: (() => number) | undefined
}

export interface CallbackOutbox {
  /**
   * Takes the envelope's nonce (refused within the replay window: 'replayed') and says whether the
   * eventId was received before ('duplicate'). A duplicate's callback is sent again after the answer,
   * since a re-push means the platform still waits for it (an operator's replay, for one).
   */
  admit(envelope: { keyVersion: number; nonce: string; eventId: string }): Promise<Admission>
  /** Records the event and its pending callback in one transaction; true when the eventId was new. */
  recordReceived(event: ReceivedEvent): Promise<boolean>
  /** Looks for due callbacks now; with an eventId, also releases that event's callback from its answer grace. */
  wake(eventId?: string): void
  callbacks(filter?: { state?: CallbackState; audioId?: string }): Promise<ReceiptCallback[]>
  /** Stops sending, waits briefly for callbacks in flight, and closes the database it opened. */
  close(): Promise<void>
}

const SECOND = 1000
const DEFAULT_RETRY_SCHEDULE = [0.5, 1, 2, 4, 8, 16, 32, 60].map((s) => s * SECOND)
const PRUNE_INTERVAL_MS = 10 * 60 * SECOND
/** A claim outlives its attempt by this much unrenewed before another claim may take the callback. */
const LEASE_MARGIN_MS = 30 * SECOND
/**
 * Attempts are recorded together, at most this long after the first of them ended: on PGlite, where
 * the pushes' statements wait for them, a statement costs far more than its rows.
 */
const RECORD_BATCH_MS = 100

/**
 * Codes whose refusal a later attempt may not get: an expired or unknown token (the client fetches a
 * new one), a rate limit, a reused nonce (every attempt is sealed afresh), and a disabled enterprise or
 * credentials the platform no longer takes (4030, 4012), which an operator enabling it again or the
 * partner restarting with its new secret puts right: until then the callback waits on the retry
 * schedule rather than being lost.
 */
const RETRYABLE_REFUSALS = new Set([4010, 4011, 4012, 4030, 4090, 4290])

/** A refusal that no later attempt can turn into 2000 (an unknown audioId, a malformed request). */
const codeOf = (error: unknown) => (error instanceof EarshotApiError ? error.code : undefined)

export function isPermanentRefusal(error: unknown): boolean {
  return (
    error instanceof EarshotApiError &&
    error.code >= 4000 &&
    error.code < 5000 &&
    !RETRYABLE_REFUSALS.has(error.code)
  )
}

/**
 * Opens (creating if needed) the receiver's durable store and starts sending pending receipt
 * callbacks, on the durable queue of @earshot/support (callbackQueue). Callbacks recorded before a
 * crash or restart are sent once it is open again.
 *
 * A callback is recorded already claimed by this outbox, held until the receiver's wake(eventId) says
 * its answer went out; the queue's runner then attempts it under that claim, without a claim
 * statement. Everything else — retries, callbacks left by a crash or by another receiver on the same
 * PostgreSQL, repeated events — is claimed from the database when due.
 */
export async function openCallbackOutbox(options: CallbackOutboxOptions): Promise<CallbackOutbox> {
  const settings = checkOptions(options)
  const { clock, logger } = settings
  const owned = options.database === undefined
  const db =
    options.database ?? (await openDatabase({ dataDir: options.dataDir, databaseUrl: options.databaseUrl }))
  // Short: it is written with every callback.
  const claimant = randomBytes(9).toString('base64url')
  /** How long a new or repeated event's callback waits for wake(eventId), and the attempt it starts. */
  const holdSeconds = (settings.answerGraceMs + settings.attemptTimeoutMs) / SECOND
  const runner = await startCallbackRunner(db, settings, claimant, holdSeconds).catch(
    async (error: unknown) => {
      if (owned) await db.close().catch(() => {})
      throw error
    },
  )
  const admissions = new Admissions(db, { ...settings, holdSeconds, claimant })

  const pruneNonces = () =>
    forgetExpiredNonces(db, new Date(clock())).catch((error: unknown) => {
      logger.warn({ error: messageOf(error) }, 'receipt callbacks: could not forget expired nonces')
    })
  let pruning = pruneNonces()
  const pruner = setInterval(() => {
    pruning = pruneNonces()
  }, PRUNE_INTERVAL_MS)
  pruner.unref()

  let closed: Promise<void> | undefined
  return {
    admit: (item) => admissions.admit(item),
    recordReceived: (event) => admissions.recordReceived(event),
    wake(eventId) {
      if (closed) return
      const mine = eventId === undefined ? undefined : admissions.take(eventId)
      if (eventId === undefined || !mine) return runner.wake(eventId === undefined ? undefined : [eventId])
      const job = { audioId: mine.audioId, eventType: mine.eventType, erased: mine.erased, failures: 0 }
      runner.adopt([{ id: eventId, fence: { claimant, claimNo: 1 }, group: null, job }])
    },
    callbacks: (filter = {}) => listCallbacks(db, filter),
    close() {
      closed ??= (async () => {
        clearInterval(pruner)
        // Hands back what it claimed; an attempt still running past the grace is aborted and recorded.
        await runner.stop(settings.closeTimeoutMs)
        await handBackHeld(db, claimant).catch((error: unknown) => {
          logger.warn({ error: messageOf(error) }, 'receipt callbacks: could not hand back held callbacks')
        })
        await pruning
        if (owned) await db.close()
      })()
      return closed
    },
  }
}

/** The outbox's schema made, then its queue runner: attempts `confirm`, retries on the schedule. */
async function startCallbackRunner(db: Database, settings: Settings, claimant: string, holdSeconds: number) {
  await createOutboxSchema(db)
  // Only this process can hold the embedded database: whatever a previous process held is due now.
  if (db.kind === 'pglite') await releaseAll(db)
  return startRunner<StoredState, string, CallbackJob, WorkResult>({
    db,
    queue: callbackQueue,
    claimant,
    concurrency: settings.concurrency,
    leaseSeconds: (settings.attemptTimeoutMs + LEASE_MARGIN_MS) / SECOND,
    pollMs: settings.pollIntervalMs,
    recordBatchMs: RECORD_BATCH_MS,
    clock: settings.clock,
    logger: runnerLogger(settings.logger),
    work: (claim, stopped) => sendCallback(settings, claim, stopped),
    next: (claim, attempt) => callbackNext(settings, holdSeconds, claim, attempt),
    observe(claim, attempt) {
      if (attempt.kind !== 'done') return
      const { audioId, erased } = claim.job
      settings.logger.info({ audioId, eventId: claim.id }, erased ? 'erasure confirmed' : 'receipt confirmed')
    },
  })
}

/** One attempt: `confirm`, abandoned after attemptTimeoutMs or when close() gives up on it. */
async function sendCallback(
  settings: Settings,
  claim: Claim<string, CallbackJob>,
  stopped: AbortSignal,
): Promise<WorkResult> {
  // One controller and timer per attempt: AbortSignal.any and .timeout cost far more per callback.
  const attempt = new AbortController()
  const timer = setTimeout(
    () => attempt.abort(new Error(`no answer within ${settings.attemptTimeoutMs} ms`)),
    settings.attemptTimeoutMs,
  )
  timer.unref()
  const stop = () => attempt.abort(new Error('the outbox is closing'))
  stopped.addEventListener('abort', stop, { once: true })
  try {
    const { signal } = attempt
    await untilAborted(
      Promise.resolve().then(() => settings.confirm(claim.job.audioId, { signal, erased: claim.job.erased })),
      signal,
    )
    return { ok: true }
  } finally {
    clearTimeout(timer)
    stopped.removeEventListener('abort', stop)
  }
}

/** Where a callback goes after its attempt: confirmed, failed for good on a permanent refusal, or retried. */
function callbackNext(
  settings: Settings,
  holdSeconds: number,
  claim: Claim<string, CallbackJob>,
  attempt: Exclude<Attempted<WorkResult>, { kind: 'aborted' }>,
): Next<StoredState> {
  const { logger } = settings
  const ids = { audioId: claim.job.audioId, eventId: claim.id }
  // Final states ignore the delay, unless a repeat re-armed the callback meanwhile (callbackQueue).
  if (attempt.kind === 'done') return { state: 'confirmed', delaySeconds: holdSeconds }
  const error = messageOf(attempt.error)
  if (isPermanentRefusal(attempt.error)) {
    // A deletion of a recording the platform never got to push here: nothing was stored to confirm.
    if (claim.job.eventType === PushEventType.DELETED && codeOf(attempt.error) === ResponseCode.NOT_FOUND) {
      logger.info(ids, 'receipt callback of a deletion: the recording was never received here')
    } else logger.error({ ...ids, erased: claim.job.erased, error }, 'receipt callback refused for good')
    return { state: 'failed', delaySeconds: holdSeconds }
  }
  const delayMs = retryDelay(settings.retrySchedule, claim.job.failures, Math.random, {
    repeatLast: true,
  }) as number
  const failures = claim.job.failures + 1
  logger.warn({ ...ids, failures, retryInMs: delayMs, error }, 'receipt callback failed; will retry')
  return { state: 'pending', delaySeconds: delayMs / SECOND }
}

type Settings = Required<
  Pick<
    CallbackOutboxOptions,
    | 'confirm'
    | 'attemptTimeoutMs'
    | 'concurrency'
    | 'answerGraceMs'
    | 'replayWindowMs'
    | 'pollIntervalMs'
    | 'closeTimeoutMs'
  >
> & { retrySchedule: readonly number[]; clock: () => number; logger: ReceiverLogger }

function checkOptions(options: CallbackOutboxOptions): Settings {
  if (typeof options.confirm !== 'function') throw new EarshotConfigError('confirm must be a function')
  const sources = [options.dataDir, options.databaseUrl, options.database].filter((s) => s !== undefined)
  if (sources.length > 1)
    throw new EarshotConfigError('give at most one of dataDir, databaseUrl and database')
  const retrySchedule = options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE
  if (
    !Array.isArray(retrySchedule) ||
    retrySchedule.length === 0 ||
    !retrySchedule.every((ms) => Number.isFinite(ms) && ms >= 0)
  ) {
    throw new EarshotConfigError('retrySchedule must be a non-empty list of delays in ms, each ≥ 0')
  }
  const positive = (name: keyof CallbackOutboxOptions, fallback: number, integer = false): number => {
    const value = options[name] ?? fallback
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) {
      throw new EarshotConfigError(`${name} must be a positive number`)
    }
    if (integer && !Number.isInteger(value)) throw new EarshotConfigError(`${name} must be a whole number`)
    return value
  }
  return {
    confirm: options.confirm,
    retrySchedule,
    attemptTimeoutMs: positive('attemptTimeoutMs', 30 * SECOND),
    concurrency: positive('concurrency', 16, true),
    answerGraceMs: positive('answerGraceMs', 10 * SECOND),
    replayWindowMs: positive('replayWindowMs', 7 * 24 * 3600 * SECOND),
    pollIntervalMs: positive('pollIntervalMs', 5 * SECOND),
    closeTimeoutMs: positive('closeTimeoutMs', 5 * SECOND),
    clock: options.clock ?? Date.now,
    logger: safeLogger(chosenLogger(options)),
  }
}

/** Rejects as soon as the signal aborts, even when the work ignores the signal. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error('aborted'))
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/** The partner's logger, unable to break the outbox by throwing. */
function safeLogger(logger: ReceiverLogger): ReceiverLogger {
  const guard =
    (level: keyof ReceiverLogger) =>
    (details: object, message: string): void => {
      try {
        logger[level](details, message)
      } catch {
        // Nothing left to tell it to.
      }
    }
  return { info: guard('info'), warn: guard('warn'), error: guard('error') }
}

/** The queue runner's reports in the partner's logger: `err` as the error's message. */
function runnerLogger(logger: ReceiverLogger): RunnerLogger {
  const adapt =
    (level: 'warn' | 'error') =>
    (details: object, message: string): void => {
      const { err, ...rest } = details as { err?: unknown }
      logger[level](
        { ...rest, ...(err !== undefined && { error: messageOf(err) }) },
        `receipt callbacks: ${message.replace(/^queue: /, '')}`,
      )
    }
  return { warn: adapt('warn'), error: adapt('error') }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  return String(error)
}
