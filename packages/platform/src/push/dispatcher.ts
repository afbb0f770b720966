import { randomUUID } from 'node:crypto'
import { type EnvelopeKey, loadKey, type PushEvent, seal } from '@earshot/protocol'
import type { PlatformConfig } from '../config/config.js'
import type { PushMetrics } from '../metrics/metrics.js'
import { recordingData } from '../recordings/recording-store.js'
import type { Database } from '../storage/database.js'
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  extendClaims,
  type FinishedAttempt,
  type NextStep,
  PUSH_CHANNEL,
  recordAttempts,
  releaseClaims,
  secondsUntilNextDue,
} from './delivery-store.js'
import { createPushSender, type PushSender, type SendOutcome } from './push-sender.js'

export type PushSettings = Pick<
  PlatformConfig,
  | 'pushRetryScheduleSeconds'
  | 'pushConfirmWindowSeconds'
  | 'pushTimeoutSeconds'
  | 'pushAllowPrivate'
  | 'pushConcurrency'
  | 'pushConcurrencyPerUrl'
>

export interface DispatcherLogger {
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

export interface DispatcherOptions {
  db: Database
  settings: PushSettings
  logger: DispatcherLogger
  metrics?: PushMetrics | undefined
  /** Epoch milliseconds, for the attempt's recorded start. */
  clock?: () => number
  randomBytes: (size: number) => Buffer
}

export interface Dispatcher {
  /** Names this dispatcher's claims in the database. */
  readonly claimant: string
  /** Looks for due deliveries now (a NOTIFY does this across processes). */
  wake(): void
  /**
   * Stops claiming, hands back claims not yet attempted, lets attempts in flight finish for up to
   * graceMs, then aborts and hands back the rest, for any other dispatcher to take.
   */
  stop(graceMs: number): Promise<void>
}

/** The longest a dispatcher sleeps between looks at the queue, whatever NOTIFY says. */
const MAX_IDLE_MS = 1000
const ERROR_BACKOFF_MS = 1000
const JITTER = 0.1

/**
 * Pushes due deliveries (DESIGN.md §6): claims them in batches with SKIP LOCKED, sends each with at
 * most `pushConcurrency` in flight overall and `pushConcurrencyPerUrl` per push URL, records every
 * attempt, and schedules what comes next: the confirm window after an ack, the retry schedule (with
 * ±10% jitter) after a failure.
 */
export async function startDispatcher({
  db,
  settings,
  logger,
  metrics,
  clock = Date.now,
  randomBytes,
}: DispatcherOptions): Promise<Dispatcher> {
  const claimant = randomUUID()
  // The lease outlives any one attempt; heartbeats renew it while an attempt waits or runs.
  const leaseSeconds = Math.max(2 * settings.pushTimeoutSeconds, 5)
  const sender: PushSender = createPushSender({
    timeoutMs: settings.pushTimeoutSeconds * 1000,
    allowPrivate: settings.pushAllowPrivate,
    connectionsPerOrigin: settings.pushConcurrencyPerUrl,
  })

  const held = new Map<number, ClaimedDelivery>()
  const waiting = new Map<string, ClaimedDelivery[]>()
  const sending = new Map<string, number>()
  const inFlight = new Map<number, { abort: AbortController; done: Promise<void> }>()
  const keys = new Map<string, EnvelopeKey>()
  let stopping = false

  // `woken` resumes the loop; `stuck` is set when everything due belongs to busy push URLs, so the
  // loop does not re-scan the queue after every attempt — only on new work, a URL freeing up, or idle.
  let woken = false
  let stuck = false
  let wakeUp: (() => void) | undefined
  const resume = () => {
    woken = true
    wakeUp?.()
  }
  const wake = () => {
    stuck = false
    resume()
  }
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) return resolve()
      const timer = setTimeout(() => {
        stuck = false
        done()
      }, ms)
      function done() {
        clearTimeout(timer)
        wakeUp = undefined
        resolve()
      }
      wakeUp = done
    })

  const unlisten = await db.listen(PUSH_CHANNEL, wake)
  const heartbeat = setInterval(
    () => {
      extendClaims(db, claimant, [...held.keys()], leaseSeconds).catch((error: unknown) =>
        logger.warn({ err: error }, 'push: could not renew claims'),
      )
    },
    (leaseSeconds * 1000) / 3,
  )
  heartbeat.unref()

  // A push URL with deliveries already waiting for its slots gets no more until they are sent.
  const saturated = () => [...waiting.keys()]

  async function loop(): Promise<void> {
    while (!stopping) {
      woken = false
      const free = settings.pushConcurrency - held.size
      let idleMs = MAX_IDLE_MS
      if (free > 0 && !stuck) {
        try {
          const excludePushUrls = saturated()
          const claimed = await claimDueDeliveries(db, {
            claimant,
            limit: free,
            leaseSeconds,
            excludePushUrls,
          })
          for (const delivery of claimed) take(delivery)
          if (claimed.length === free) continue
          const next = await secondsUntilNextDue(db)
          // (Unless something woke us meanwhile: then what was busy may have freed up.)
          if (next === 0 && excludePushUrls.length > 0 && !woken) stuck = true
          else if (next !== undefined && next > 0) idleMs = Math.min(idleMs, next * 1000)
        } catch (error) {
          if (stopping) break
          logger.error({ err: error }, 'push: claiming deliveries failed')
          idleMs = ERROR_BACKOFF_MS
        }
      }
      await sleep(idleMs)
    }
  }

  function take(delivery: ClaimedDelivery): void {
    if (delivery.gaveUp) return // out of re-pushes: the claim marked it unconfirmed
    held.set(delivery.deliveryId, delivery)
    metrics?.inFlight.set(held.size)
    const url = delivery.pushUrl ?? ''
    waiting.set(url, [...(waiting.get(url) ?? []), delivery])
    pump(url)
  }

  function pump(url: string): void {
    const queue = waiting.get(url)
    while (
      !stopping &&
      queue &&
      queue.length > 0 &&
      (sending.get(url) ?? 0) < settings.pushConcurrencyPerUrl
    ) {
      const delivery = queue.shift() as ClaimedDelivery
      sending.set(url, (sending.get(url) ?? 0) + 1)
      const abort = new AbortController()
      const done = attempt(delivery, abort.signal, () => {
        const left = (sending.get(url) ?? 1) - 1
        if (left === 0) sending.delete(url)
        else sending.set(url, left)
        pump(url)
      }).finally(() => {
        inFlight.delete(delivery.deliveryId)
        held.delete(delivery.deliveryId)
        metrics?.inFlight.set(held.size)
        // Claim again once half the slots are free: one claim per batch, not per finished attempt.
        if (held.size <= settings.pushConcurrency / 2) resume()
      })
      inFlight.set(delivery.deliveryId, { abort, done })
    }
    if (queue?.length === 0) {
      waiting.delete(url)
      if (!stopping) wake() // the URL can take more work: claims may include it again
    }
  }

  /** Sends, frees the URL's slot as soon as the answer is in, then records the attempt (batched). */
  async function attempt(
    delivery: ClaimedDelivery,
    signal: AbortSignal,
    answered: () => void,
  ): Promise<void> {
    const startedAt = clock()
    const outcome = await send(delivery, signal)
    answered()
    metrics?.attempts.inc({ result: outcome.result })
    metrics?.latency.observe({ result: outcome.result }, outcome.durationMs / 1000)
    await record({
      deliveryId: delivery.deliveryId,
      attemptNo: delivery.attemptNo,
      outcome: { ...outcome, startedAt },
      next: nextStep(delivery, outcome),
    })
  }

  // Attempts finishing while a batch is being written go into the next batch: one statement per
  // batch instead of one per attempt, without waiting on a timer.
  let unrecorded: { attempt: FinishedAttempt; recorded: () => void }[] = []
  let recording = false
  function record(finished: FinishedAttempt): Promise<void> {
    return new Promise((recorded) => {
      unrecorded.push({ attempt: finished, recorded })
      if (!recording) void flush()
    })
  }
  async function flush(): Promise<void> {
    recording = true
    while (unrecorded.length > 0) {
      const batch = unrecorded
      unrecorded = []
      try {
        await recordAttempts(
          db,
          claimant,
          batch.map((entry) => entry.attempt),
        )
      } catch (error) {
        // The claims' leases run out and the deliveries are attempted again: at least once, never lost.
        logger.error({ err: error, deliveries: batch.length }, 'push: could not record attempts')
      }
      for (const entry of batch) entry.recorded()
    }
    recording = false
  }

  async function send(delivery: ClaimedDelivery, signal: AbortSignal): Promise<SendOutcome> {
    const notSendable = (error: string): SendOutcome => ({
      result: 'rejected',
      acked: false,
      durationMs: 0,
      error,
    })
    if (!delivery.pushUrl) return notSendable('the enterprise has no push URL')
    if (delivery.disabled) return notSendable('the enterprise is disabled')
    if (!delivery.key) return notSendable('the enterprise has no current key')
    const event: PushEvent = {
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      audioId: delivery.audioId,
      occurredAt: delivery.occurredAt,
      data: recordingData(delivery.recording),
    }
    const envelope = seal(keyOf(delivery.key.secret), delivery.key.keyVersion, delivery.eventId, event, {
      randomBytes,
    })
    return sender.send({
      url: delivery.pushUrl,
      eventId: delivery.eventId,
      body: JSON.stringify(envelope),
      signal,
    })
  }

  function keyOf(secret: string): EnvelopeKey {
    let key = keys.get(secret)
    if (!key) {
      key = loadKey(secret)
      keys.set(secret, key)
    }
    return key
  }

  function nextStep(delivery: ClaimedDelivery, outcome: SendOutcome): NextStep {
    if (outcome.acked)
      return { kind: 'await_callback', confirmWindowSeconds: settings.pushConfirmWindowSeconds }
    const delay = settings.pushRetryScheduleSeconds[delivery.failures]
    if (delay === undefined) return { kind: 'fail' }
    const spread = (randomBytes(4).readUInt32BE() / 2 ** 32) * 2 - 1
    return { kind: 'retry', delaySeconds: delay * (1 + JITTER * spread) }
  }

  const running = loop()

  let stopped: Promise<void> | undefined
  return {
    claimant,
    wake,
    stop(graceMs) {
      stopped ??= (async () => {
        stopping = true
        wake()
        await running
        const queued = [...waiting.values()].flat().map((delivery) => delivery.deliveryId)
        waiting.clear()
        await releaseClaims(db, claimant, queued).catch((error: unknown) =>
          logger.warn({ err: error }, 'push: could not hand back waiting deliveries'),
        )
        const settled = Promise.all([...inFlight.values()].map((flight) => flight.done))
        let timer: NodeJS.Timeout | undefined
        const graceOver = new Promise<'grace over'>((resolve) => {
          timer = setTimeout(() => resolve('grace over'), graceMs)
        })
        if ((await Promise.race([settled, graceOver])) === 'grace over') {
          // Handed back first, so the aborted attempts record themselves without moving the delivery.
          await releaseClaims(db, claimant, [...inFlight.keys()]).catch((error: unknown) =>
            logger.warn({ err: error }, 'push: could not hand back deliveries in flight'),
          )
          for (const flight of inFlight.values()) flight.abort.abort()
          await settled
        }
        clearTimeout(timer)
        clearInterval(heartbeat)
        await unlisten()
        await sender.close()
      })()
      return stopped
    },
  }
}
