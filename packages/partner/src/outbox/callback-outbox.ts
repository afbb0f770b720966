import { EarshotApiError, EarshotConfigError } from '../client/errors.js'
import { defaultLogger, type ReceiverLogger } from '../receiver/logger.js'
import { batcher } from '../storage/batcher.js'
import { type Database, openDatabase } from '../storage/database.js'
import {
  admitAndRecord,
  type CallbackState,
  claim,
  type EnvelopeSeen,
  forgetExpiredNonces,
  listCallbacks,
  makeAllDue,
  nonceKey,
  type Outcome,
  type ReceiptCallback,
  rearm,
  writeOutcomes,
} from './outbox-store.js'
import { createOutboxSchema } from './schema.js'

export type { CallbackState, ReceiptCallback }

/** Sends one receipt callback; resolves when the platform confirmed it (code 2000). */
export type ConfirmReceipt = (audioId: string, options: { signal: AbortSignal }) => Promise<void>

export interface CallbackOutboxOptions {
  /** PGlite data directory; undefined (and no databaseUrl or database) keeps everything in memory. */
  dataDir?: string | undefined
  /** PostgreSQL connection URL: any number of receivers may share it. */
  databaseUrl?: string | undefined
  /** A database opened by the caller (e.g. to store recordings beside the outbox); not closed by close(). */
  database?: Database | undefined
  /** The receipt callback, e.g. `(audioId, { signal }) => client.confirmReceipt(audioId, { signal })`. */
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
  /** How long an accepted envelope nonce is refused again. Default 7 days (DESIGN.md §1). */
  replayWindowMs?: number | undefined
  /** Pending callbacks are looked for at least this often (others sharing the database add some). Default 5 s. */
  pollIntervalMs?: number | undefined
  /** close() waits this long for callbacks in flight before abandoning them (they stay pending). Default 5 s. */
  closeTimeoutMs?: number | undefined
  /** Epoch milliseconds; tests inject one they can move. */
  clock?: (() => number) | undefined
  logger?: ReceiverLogger | undefined
}

/** What the outbox knows of a push before its recording is handed over. */
export type Admission = 'new' | 'duplicate' | 'replayed'

export interface ReceivedEvent {
  eventId: string
  eventType: string
  audioId: string
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
const ERROR_PAUSE_MS = SECOND
/** A claim outlives its attempt by this much before another claim may take the callback. */
const LEASE_MARGIN_MS = 30 * SECOND
const MAX_ERROR_LENGTH = 1000
/** Outcomes of callbacks are written together, at most this long after the first of them. */
const OUTCOME_DELAY_MS = 20
const MAX_OUTCOME_BATCH = 256
/** On PostgreSQL, batches of pushes run on this many pool connections at once. */
const POSTGRES_PARALLEL_BATCHES = 4

/**
 * Codes whose refusal a later attempt may not get: an expired or unknown token (the client fetches a
 * new one), a rate limit, and a reused nonce (every attempt is sealed afresh).
 */
const RETRYABLE_REFUSALS = new Set([4010, 4011, 4090, 4290])

/** A refusal that no later attempt can turn into 2000 (unknown audioId, wrong key, disabled enterprise...). */
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
 * callbacks. Callbacks recorded before a crash or restart are sent once it is open again.
 *
 * A callback recorded here is held (next_attempt_at in the future) until the receiver's
 * wake(eventId) says its answer went out; this process then sends it straight away, without
 * claiming it in the database. Everything else — retries, callbacks left by a crash or by another
 * receiver on the same PostgreSQL, repeated events — is claimed from the database when due.
 */
export async function openCallbackOutbox(options: CallbackOutboxOptions): Promise<CallbackOutbox> {
  const settings = checkOptions(options)
  const { confirm, clock, logger, concurrency } = settings
  const owned = options.database === undefined
  const db =
    options.database ?? (await openDatabase({ dataDir: options.dataDir, databaseUrl: options.databaseUrl }))
  try {
    await createOutboxSchema(db)
    // Only this process can hold the embedded database: whatever a previous process held is due now.
    if (db.kind === 'pglite') await makeAllDue(db, new Date(clock()))
  } catch (error) {
    if (owned) await db.close().catch(() => {})
    throw error
  }
  /** Until when a new or repeated event's callback waits for wake(eventId), and the send it starts. */
  const holdUntil = (now: number) => new Date(now + settings.answerGraceMs + settings.attemptTimeoutMs)

  /** Callbacks this process recorded, waiting for wake(eventId): eventId → audioId, when recorded. */
  const recorded = new Map<string, { audioId: string; at: number }>()

  // admit() and recordReceived() calls made together share one statement (see outbox-store.ts).
  const tick = batcher(
    async (work: Work[]): Promise<(Admission | boolean)[]> => {
      const now = clock()
      const results: (Admission | boolean)[] = new Array(work.length)
      const admits: { item: EnvelopeSeen; index: number }[] = []
      const records: { event: ReceivedEvent; index: number }[] = []
      const nonces = new Set<string>()
      const eventIds = new Set<string>()
      work.forEach((entry, index) => {
        if (entry.kind === 'admit') {
          const key = nonceKey(entry.item.keyVersion, entry.item.nonce)
          // The same nonce twice in one batch: the later one is a replay of the earlier.
          if (nonces.has(key)) results[index] = 'replayed'
          else {
            nonces.add(key)
            admits.push({ item: entry.item, index })
          }
        } else if (eventIds.has(entry.event.eventId)) results[index] = false
        else {
          eventIds.add(entry.event.eventId)
          records.push({ event: entry.event, index })
        }
      })
      const { taken, known, created } = await admitAndRecord(
        db,
        admits.map((a) => a.item),
        records.map((r) => r.event),
        {
          now: new Date(now),
          nonceExpiresAt: new Date(now + settings.replayWindowMs),
          holdUntil: holdUntil(now),
        },
      )
      for (const { event, index } of records) {
        const isNew = created.has(event.eventId)
        results[index] = isNew
        if (isNew) recorded.set(event.eventId, { audioId: event.audioId, at: now })
      }
      const repeated: string[] = []
      for (const { item, index } of admits) {
        if (!taken.has(nonceKey(item.keyVersion, item.nonce))) results[index] = 'replayed'
        // An event recorded by this very statement is not in its snapshot of the table: ask eventIds too.
        else if (known.has(item.eventId) || eventIds.has(item.eventId)) {
          results[index] = 'duplicate'
          repeated.push(item.eventId)
        } else results[index] = 'new'
      }
      if (repeated.length > 0) {
        for (const eventId of repeated) {
          // Its callback is being sent or its outcome not yet written: rearm() would find it still
          // pending, so the outcome itself must leave it pending.
          if (jobs.has(eventId) || outcomes.some((o) => o.eventId === eventId)) repeatedWhileBusy.add(eventId)
        }
        await rearm(db, repeated, holdUntil(now))
      }
      return results
    },
    { parallel: db.kind === 'postgres' ? POSTGRES_PARALLEL_BATCHES : 1 },
  )

  // --- sending -----------------------------------------------------------------------------------

  /** A callback to send: `fence` is the attempts count its row has now, `attempts` the one to record. */
  interface Job {
    eventId: string
    audioId: string
    fence: number
    attempts: number
  }
  const jobs = new Map<string, Job>() // queued or in flight
  const repeatedWhileBusy = new Set<string>()
  const queue: Job[] = []
  const running = new Set<Promise<void>>()
  let outcomes: Outcome[] = []
  let released: string[] = []
  let stopping = false
  let poked = false
  let interruptSleep: (() => void) | undefined
  let flushTimer: NodeJS.Timeout | undefined
  /** The loop claims when this time comes (the poll), or earlier when poked with reason. */
  let claimAt = 0
  /** The earliest retry this process scheduled and has not claimed yet. */
  let nextRetryAt = Number.POSITIVE_INFINITY
  const closing = new AbortController()
  /** The attempts in flight, aborted by close() when they outlast its wait. */
  const attempts = new Set<AbortController>()

  const poke = () => {
    poked = true
    interruptSleep?.()
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (poked || stopping) return resolve()
      const done = () => {
        clearTimeout(timer)
        interruptSleep = undefined
        resolve()
      }
      const timer = setTimeout(done, Math.max(0, ms))
      timer.unref()
      interruptSleep = done
    })

  const enqueue = (job: Job) => {
    jobs.set(job.eventId, job)
    queue.push(job)
    pump()
  }

  const pump = () => {
    while (running.size < concurrency && queue.length > 0 && !stopping) {
      const job = queue.shift() as Job
      const attempt = send(job).finally(() => {
        running.delete(attempt)
        jobs.delete(job.eventId)
        pump()
        // The loop waits for room to claim callbacks that are due.
        if (claimAt <= clock()) poke()
      })
      running.add(attempt)
    }
  }

  /** Outcomes are written in batches, a little after the first of a batch. */
  const recordOutcome = (outcome: Outcome, urgent: boolean) => {
    outcomes.push(outcome)
    if (urgent || outcomes.length >= MAX_OUTCOME_BATCH) return poke()
    flushTimer ??= setTimeout(() => {
      flushTimer = undefined
      poke()
    }, OUTCOME_DELAY_MS).unref()
  }

  const flushOutcomes = async () => {
    clearTimeout(flushTimer)
    flushTimer = undefined
    if (outcomes.length === 0) return
    const batch = outcomes.map((outcome) => {
      if (!repeatedWhileBusy.delete(outcome.eventId) || outcome.state === 'pending') return outcome
      return { ...outcome, state: 'pending' as const, nextAttemptAt: holdUntil(clock()), doneAt: null }
    })
    outcomes = []
    try {
      await writeOutcomes(db, batch)
    } catch (error) {
      // Not lost: the callbacks stay pending and are sent again once their hold or lease ends.
      logger.error('receipt callbacks: could not record outcomes', { error: messageOf(error) })
    }
  }

  const send = async (job: Job): Promise<void> => {
    // One controller and timer per attempt: AbortSignal.any and .timeout cost far more per callback.
    const attempt = new AbortController()
    const timer = setTimeout(
      () => attempt.abort(new Error(`no answer within ${settings.attemptTimeoutMs} ms`)),
      settings.attemptTimeoutMs,
    )
    timer.unref()
    attempts.add(attempt)
    const signal = attempt.signal
    const ids = { audioId: job.audioId, eventId: job.eventId }
    try {
      await untilAborted(
        Promise.resolve().then(() => confirm(job.audioId, { signal })),
        signal,
      )
      logger.info('receipt confirmed', { ...ids, attempts: job.attempts })
      const doneAt = new Date(clock())
      recordOutcome({ ...job, state: 'confirmed', nextAttemptAt: null, lastError: null, doneAt }, false)
    } catch (error) {
      const message = messageOf(error).slice(0, MAX_ERROR_LENGTH)
      const now = clock()
      if (isPermanentRefusal(error)) {
        logger.error('receipt callback refused for good', { ...ids, error: message })
        recordOutcome(
          { ...job, state: 'failed', nextAttemptAt: null, lastError: message, doneAt: new Date(now) },
          false,
        )
        return
      }
      const interrupted = closing.signal.aborted
      const due = interrupted ? now : now + retryDelay(settings.retrySchedule, job.attempts)
      if (!interrupted) {
        nextRetryAt = Math.min(nextRetryAt, due)
        logger.warn('receipt callback failed; will retry', {
          ...ids,
          attempts: job.attempts,
          retryInMs: due - now,
          error: message,
        })
      }
      const lastError = interrupted ? `interrupted by close: ${message}` : message
      recordOutcome({ ...job, state: 'pending', nextAttemptAt: new Date(due), lastError, doneAt: null }, true)
    } finally {
      clearTimeout(timer)
      attempts.delete(attempt)
    }
  }

  /** One turn of the loop; returns how long to sleep unless poked. */
  const turn = async (): Promise<number> => {
    await flushOutcomes()
    const now = clock()
    for (const [eventId, { at }] of recorded) {
      // Never woken (the answer did not go out): its hold ends and a claim sends it.
      if (at < now - settings.answerGraceMs) recorded.delete(eventId)
      else break
    }
    const free = concurrency - running.size - queue.length
    const due = released.length > 0 || now >= claimAt || nextRetryAt <= now
    if (due && free > 0 && !stopping) {
      const wanted = released.filter((eventId) => !jobs.has(eventId))
      released = []
      const rows = await claim(
        db,
        free,
        new Date(now),
        new Date(now + settings.attemptTimeoutMs + LEASE_MARGIN_MS),
        wanted,
      )
      for (const row of rows) {
        const job = jobs.get(row.eventId)
        if (job) {
          // Sent from memory already, and its hold ran out meanwhile: its outcome counts for this claim.
          job.fence = row.attempts
          job.attempts = row.attempts
        } else enqueue({ ...row, fence: row.attempts })
      }
      if (rows.length === free) {
        // More may be due: claim again as soon as there is room.
        claimAt = now
        const taken = new Set(rows.map((row) => row.eventId))
        released.push(...wanted.filter((eventId) => !taken.has(eventId)))
      } else {
        claimAt = now + settings.pollIntervalMs
        if (nextRetryAt <= now) nextRetryAt = Number.POSITIVE_INFINITY
      }
    }
    return Math.min(claimAt, nextRetryAt) - now
  }

  const loop = (async () => {
    let pruneAt = 0
    while (!stopping) {
      poked = false
      let pause: number
      try {
        if (clock() >= pruneAt) {
          pruneAt = clock() + PRUNE_INTERVAL_MS
          await forgetExpiredNonces(db, new Date(clock())).catch((error) => {
            logger.warn('receipt callbacks: could not forget expired nonces', { error: messageOf(error) })
          })
        }
        pause = await turn()
      } catch (error) {
        if (stopping) break
        logger.error('receipt callbacks: could not look for due callbacks', { error: messageOf(error) })
        await new Promise((resolve) => setTimeout(resolve, ERROR_PAUSE_MS).unref())
        continue
      }
      // With no room, a finished send pokes.
      await sleep(concurrency - running.size - queue.length > 0 ? pause : settings.pollIntervalMs)
    }
  })()

  let closed: Promise<void> | undefined
  return {
    admit: (item) => tick({ kind: 'admit', item }) as Promise<Admission>,
    recordReceived: (event) => tick({ kind: 'record', event }) as Promise<boolean>,
    wake(eventId) {
      if (stopping) return
      if (eventId !== undefined) {
        const mine = recorded.get(eventId)
        if (mine) {
          recorded.delete(eventId)
          if (!jobs.has(eventId)) enqueue({ eventId, audioId: mine.audioId, fence: 0, attempts: 1 })
          return
        }
        released.push(eventId)
      }
      poke()
    },
    callbacks: (filter = {}) => listCallbacks(db, filter),
    close() {
      closed ??= (async () => {
        stopping = true
        poke()
        await loop
        const all = Promise.allSettled(running)
        let timer: NodeJS.Timeout | undefined
        await Promise.race([
          all,
          new Promise((resolve) => (timer = setTimeout(resolve, settings.closeTimeoutMs))),
        ])
        clearTimeout(timer)
        closing.abort()
        for (const attempt of attempts) attempt.abort(new Error('the outbox is closing'))
        await all
        await flushOutcomes()
        if (owned) await db.close()
      })()
      return closed
    },
  }
}

type Work = { kind: 'admit'; item: EnvelopeSeen } | { kind: 'record'; event: ReceivedEvent }

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
    logger: options.logger ?? defaultLogger,
  }
}

/** The schedule's delay after the n-th failed attempt (1-based), the last repeating, with ±10% jitter. */
function retryDelay(schedule: readonly number[], attempts: number): number {
  const base = schedule[Math.min(attempts, schedule.length) - 1] ?? 0
  return Math.round(base * (0.9 + 0.2 * Math.random()))
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

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  return String(error)
}
