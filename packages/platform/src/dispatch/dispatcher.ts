import { type EnvelopeKey, loadKey, type PushEvent, PushEventType, seal } from '@earshot/protocol'
import type { Logger } from '@earshot/support/logger'
import {
  type Attempted,
  type Claim,
  type Next,
  retryDelay,
  startRunner,
  type WorkResult,
} from '@earshot/support/queue'
import type { PlatformConfig } from '../config/config.js'
import type { DeliveryState } from '../deliveries/delivery-states.js'
import { type AttemptOutcome, type ClaimedDelivery, deliveryQueue } from '../deliveries/delivery-store.js'
import { type PushUrlOutcome, urlLabel } from '../push-urls/push-url-health.js'
import { PushUrlHealthRecorder } from '../push-urls/push-url-health-recorder.js'
import { type AudioLink, recordingData } from '../recordings/recording-data.js'
import type { Database } from '../storage/database.js'
import type { PushAttemptResult, PushMetrics } from './push-metrics.js'
import { type AttemptResult, createPushSender, type PushSender } from './push-sender.js'

export type PushSettings = Pick<
  PlatformConfig,
  | 'pushRetryScheduleSeconds'
  | 'pushConfirmWindowSeconds'
  | 'pushTimeoutSeconds'
  | 'pushAllowPrivate'
  | 'pushConcurrency'
  | 'pushConcurrencyPerUrl'
  | 'pushDisableAfterSeconds'
>

export type DispatcherLogger = Pick<Logger, 'warn' | 'error' | 'info'>

export interface DispatcherOptions {
  db: Database
  settings: PushSettings
  logger: DispatcherLogger
  metrics?: PushMetrics | undefined
  /** Epoch milliseconds, for the attempt's recorded start and its push URL's health. */
  clock?: () => number
  randomBytes: (size: number) => Buffer
  /** Mints the links of stored audio in the pushes of one enterprise. */
  audioLinks?: ((enterpriseId: number) => Promise<AudioLink>) | undefined
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
  /** `gone`: answered 410 Gone, which disabled the push URL; it does not count as a failure. */
  outcome: AttemptOutcome
  result: AttemptResult
}

const GONE = 410
const GONE_ERROR = 'HTTP 410 Gone: the push URL is disabled until an operator enables it again'

/**
 * Pushes due deliveries with a queue runner: claims with SKIP LOCKED, at most
 * `pushConcurrency` held and `pushConcurrencyPerUrl` sending per push URL, every attempt recorded, then
 * what comes next: the confirm window after an ack, the retry schedule (±10% jitter) after a failure.
 * Every attempt that reached a push URL (or failed to) counts in the URL's health (push-url-health.ts);
 * a disabled URL's deliveries are not claimed. A 410 Gone disables the URL before its attempt is
 * recorded, and puts the delivery back to pending, due now, as it was: no step of its retry schedule
 * is spent, and it waits with the URL's other deliveries for an operator to enable it again.
 */
export async function startDispatcher(options: DispatcherOptions): Promise<Dispatcher> {
  const { db, settings, logger, metrics, randomBytes } = options
  const sender = createPushSender({
    timeoutMs: settings.pushTimeoutSeconds * 1000,
    allowPrivate: settings.pushAllowPrivate,
    connectionsPerOrigin: settings.pushConcurrencyPerUrl,
  })
  let wakeRunner = () => {}
  const health = new PushUrlHealthRecorder(
    db,
    settings.pushDisableAfterSeconds,
    logger,
    () => wakeRunner(),
    () => metrics?.recovered.inc(),
  )
  const step = new PushStep(sender, health, randomBytes, options.clock ?? Date.now, options.audioLinks)
  const random = () => randomBytes(4).readUInt32BE() / 2 ** 32

  // The lease outlives any one attempt; heartbeats renew it while an attempt waits or runs.
  const runner = await startRunner<DeliveryState, number, ClaimedDelivery, Pushed>({
    db,
    queue: deliveryQueue,
    concurrency: settings.pushConcurrency,
    perGroup: settings.pushConcurrencyPerUrl,
    leaseSeconds: Math.max(2 * settings.pushTimeoutSeconds, 5),
    logger,
    clock: options.clock,
    work: (claim, signal) => step.push(claim, signal),
    next(claim, attempt) {
      if (attempt.kind === 'done') {
        if (attempt.result.ok) return { state: 'acked', delaySeconds: settings.pushConfirmWindowSeconds }
        if (attempt.result.outcome === 'gone') {
          logFailedAttempt(logger, claim, attempt, 'held: the push URL is disabled')
          return { state: 'pending', delaySeconds: 0 }
        }
      }
      const delay = retryDelay(settings.pushRetryScheduleSeconds, claim.job.failures, random)
      const next: Next<DeliveryState> =
        delay === undefined ? { state: 'failed' } : { state: 'pending', delaySeconds: delay }
      logFailedAttempt(
        logger,
        claim,
        attempt,
        delay === undefined ? 'failed: its retry schedule is spent' : `retry in ${delay.toFixed(1)} s`,
      )
      return next
    },
    observe(_claim, attempt, record) {
      const result: PushAttemptResult =
        attempt.kind === 'done' ? attempt.result.result : attempt.kind === 'aborted' ? 'aborted' : 'error'
      metrics?.attempts.inc({ result })
      metrics?.latency.observe({ result }, record.durationMs / 1000)
    },
    onHeld: (held) => metrics?.inFlight.set(held),
  })
  wakeRunner = () => runner.wake()

  return {
    claimant: runner.claimant,
    wake: () => runner.wake(),
    async stop(graceMs) {
      await runner.stop(graceMs)
      await health.settled()
      await sender.close()
    },
  }
}

/** The dispatcher's work step: seals and sends one push, and tells the push URL's health how it went. */
class PushStep {
  readonly #keys = new Map<string, EnvelopeKey>()

  constructor(
    private readonly sender: PushSender,
    private readonly health: PushUrlHealthRecorder,
    private readonly randomBytes: (size: number) => Buffer,
    private readonly now: () => number,
    private readonly audioLinks: DispatcherOptions['audioLinks'],
  ) {}

  /** Throws when the push cannot even be made (a stored key that fails to load). */
  async push({ job: delivery }: Claim<number, ClaimedDelivery>, signal: AbortSignal): Promise<Pushed> {
    if (!delivery.pushUrl) return notSendable('the enterprise has no push URL')
    if (delivery.disabled) return notSendable('the enterprise is disabled')
    if (!delivery.key) return notSendable('the enterprise has no current key')
    const event = pushEvent(delivery, await this.audioLinks?.(delivery.enterpriseId))
    if (!event) return notSendable('the recording was deleted')
    const key = this.#keyOf(delivery.key.secret)
    const envelope = seal(key, delivery.key.keyVersion, delivery.eventId, event, {
      randomBytes: this.randomBytes,
    })
    const sent = await this.sender.send({
      url: delivery.pushUrl,
      eventId: delivery.eventId,
      body: JSON.stringify(envelope),
      signal,
    })
    const attempted: Pushed = {
      ok: sent.acked,
      outcome: sent.acked ? 'acked' : 'failed',
      result: sent.result,
      durationMs: sent.durationMs,
      error: sent.error,
      columns: {
        http_status: sent.httpStatus ?? null,
        response_code: sent.responseCode ?? null,
        answer: sent.answer ?? null,
      },
    }
    // An attempt cut off by a shutdown says nothing about the push URL.
    if (sent.result === 'aborted') return attempted
    const outcome: PushUrlOutcome = {
      url: delivery.pushUrl,
      at: this.now(),
      ok: sent.acked,
      error: sent.error,
    }
    if (sent.httpStatus !== GONE) {
      void this.health.record(outcome).catch(() => {})
      return attempted
    }
    // Should the URL fail to be disabled (the database failed), this is an ordinary failed attempt.
    const disabled = await this.health.record({ ...outcome, gone: true }).then(
      () => true,
      () => false,
    )
    return disabled ? { ...attempted, outcome: 'gone', error: GONE_ERROR } : attempted
  }

  #keyOf(secret: string): EnvelopeKey {
    let key = this.#keys.get(secret)
    if (!key) {
      key = loadKey(secret)
      this.#keys.set(secret, key)
    }
    return key
  }
}

/**
 * A failed attempt, as a warning an operator can act on: the delivery, its event, the push URL without its
 * query string (which may carry the partner's token), the HTTP status and code answered (or the error), and
 * what comes next. Never the body pushed, nor the partner's answer beyond its status and code.
 */
function logFailedAttempt(
  logger: DispatcherLogger,
  { id, job: delivery }: Claim<number, ClaimedDelivery>,
  attempt: Exclude<Attempted<Pushed>, { kind: 'aborted' }>,
  next: string,
): void {
  const pushed = attempt.kind === 'done' ? attempt.result : undefined
  const error =
    attempt.kind === 'done'
      ? attempt.result.error
      : `the push could not be made: ${attempt.error instanceof Error ? attempt.error.message : String(attempt.error)}`
  logger.warn(
    {
      deliveryId: id,
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      enterpriseId: delivery.enterpriseId,
      ...(delivery.pushUrl && { url: urlLabel(delivery.pushUrl) }),
      httpStatus: pushed?.columns?.http_status ?? undefined,
      responseCode: pushed?.columns?.response_code ?? undefined,
      error: delivery.pushUrl && error ? withoutQuery(error, delivery.pushUrl) : error,
      next,
    },
    'push attempt failed',
  )
}

/** An error's text without the push URL's query string, should it quote it (credentials are refused there). */
function withoutQuery(text: string, pushUrl: string): string {
  const search = URL.canParse(pushUrl) ? new URL(pushUrl).search : ''
  return search ? text.replaceAll(search, '') : text
}

function notSendable(error: string): Pushed {
  return { ok: false, outcome: 'failed', result: 'rejected', durationMs: 0, error }
}

/** The event a delivery pushes; undefined for a recording part whose recording is gone. */
function pushEvent(delivery: ClaimedDelivery, audioLink: AudioLink | undefined): PushEvent | undefined {
  const head = { eventId: delivery.eventId, audioId: delivery.audioId, occurredAt: delivery.occurredAt }
  if (delivery.eventType === PushEventType.DELETED)
    return { ...head, eventType: delivery.eventType, data: {} }
  if (!delivery.recording) return undefined
  return { ...head, eventType: delivery.eventType, data: recordingData(delivery.recording, audioLink) }
}
