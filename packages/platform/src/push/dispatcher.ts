import { type EnvelopeKey, loadKey, type PushEvent, seal } from '@earshot/protocol'
import { type Claim, retryDelay, startRunner, type WorkResult } from '@earshot/support/queue'
import type { PlatformConfig } from '../config/config.js'
import type { PushAttemptResult, PushMetrics } from '../metrics/metrics.js'
import { recordingData } from '../recordings/recording-data.js'
import type { Database } from '../storage/database.js'
import type { DeliveryState } from './delivery-states.js'
import { type AttemptOutcome, type ClaimedDelivery, deliveryQueue } from './delivery-store.js'
import { type AttemptResult, createPushSender, type PushSender } from './push-sender.js'

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
   * graceMs, then hands back and aborts the rest, for any other dispatcher to take.
   */
  stop(graceMs: number): Promise<void>
}

/** One push as the dispatcher's work step reports it. */
interface Pushed extends WorkResult {
  outcome: AttemptOutcome
  result: AttemptResult
}

/**
 * Pushes due deliveries (DESIGN.md §6) with a queue runner: claims with SKIP LOCKED, at most
 * `pushConcurrency` held and `pushConcurrencyPerUrl` sending per push URL, every attempt recorded, then
 * what comes next: the confirm window after an ack, the retry schedule (±10% jitter) after a failure.
 */
export async function startDispatcher({
  db,
  settings,
  logger,
  metrics,
  clock,
  randomBytes,
}: DispatcherOptions): Promise<Dispatcher> {
  const sender: PushSender = createPushSender({
    timeoutMs: settings.pushTimeoutSeconds * 1000,
    allowPrivate: settings.pushAllowPrivate,
    connectionsPerOrigin: settings.pushConcurrencyPerUrl,
  })
  const keys = new Map<string, EnvelopeKey>()
  const keyOf = (secret: string): EnvelopeKey => {
    let key = keys.get(secret)
    if (!key) {
      key = loadKey(secret)
      keys.set(secret, key)
    }
    return key
  }
  const random = () => randomBytes(4).readUInt32BE() / 2 ** 32

  /** Seals and sends one push. Throws when the push cannot even be made (a stored key that fails to load). */
  async function push(
    { job: delivery }: Claim<number, ClaimedDelivery>,
    signal: AbortSignal,
  ): Promise<Pushed> {
    const notSendable = (error: string): Pushed => ({
      ok: false,
      outcome: 'failed',
      result: 'rejected',
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
    const sent = await sender.send({
      url: delivery.pushUrl,
      eventId: delivery.eventId,
      body: JSON.stringify(envelope),
      signal,
    })
    return {
      ok: sent.acked,
      outcome: sent.acked ? 'acked' : 'failed',
      result: sent.result,
      durationMs: sent.durationMs,
      error: sent.error,
      columns: { http_status: sent.httpStatus ?? null, response_code: sent.responseCode ?? null },
    }
  }

  // The lease outlives any one attempt; heartbeats renew it while an attempt waits or runs.
  const runner = await startRunner<DeliveryState, number, ClaimedDelivery, Pushed>({
    db,
    queue: deliveryQueue,
    concurrency: settings.pushConcurrency,
    perGroup: settings.pushConcurrencyPerUrl,
    leaseSeconds: Math.max(2 * settings.pushTimeoutSeconds, 5),
    logger,
    clock,
    work: push,
    next(claim, attempt) {
      if (attempt.kind === 'done' && attempt.result.ok) {
        return { state: 'acked', delaySeconds: settings.pushConfirmWindowSeconds }
      }
      const delay = retryDelay(settings.pushRetryScheduleSeconds, claim.job.failures, random)
      return delay === undefined ? { state: 'failed' } : { state: 'pending', delaySeconds: delay }
    },
    observe(_claim, attempt, record) {
      const result: PushAttemptResult =
        attempt.kind === 'done' ? attempt.result.result : attempt.kind === 'aborted' ? 'aborted' : 'error'
      metrics?.attempts.inc({ result })
      metrics?.latency.observe({ result }, record.durationMs / 1000)
    },
    onHeld: (held) => metrics?.inFlight.set(held),
  })

  return {
    claimant: runner.claimant,
    wake: runner.wake,
    async stop(graceMs) {
      await runner.stop(graceMs)
      await sender.close()
    },
  }
}
