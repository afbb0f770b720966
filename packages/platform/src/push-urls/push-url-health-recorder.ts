import { batcher } from '@earshot/support/batcher'
import type { Database } from '../storage/database.js'
import { type PushUrlOutcome, recordPushUrlOutcomes, urlLabel } from './push-url-health.js'

interface HealthLogger {
  warn(details: object, message: string): void
  info(details: object, message: string): void
}

/**
 * Records the outcomes of push attempts in push URLs' health: one statement for the attempts that ended
 * meanwhile. Attempts do not wait for it, except a 410, whose URL must be disabled before its delivery is
 * pending again. A URL disabled calls onDisabled (the runner's sweep then holds its deliveries); one recovered
 * by itself calls onRecovered with how many failed deliveries it replayed.
 */
export class PushUrlHealthRecorder {
  #last: Promise<unknown> = Promise.resolve()
  readonly #record: (outcome: PushUrlOutcome) => Promise<undefined>

  constructor(
    db: Database,
    disableAfterSeconds: number,
    private readonly logger: HealthLogger,
    onDisabled: () => void,
    onRecovered: (replayed: number) => void = () => {},
  ) {
    this.#record = batcher(async (outcomes: PushUrlOutcome[]) => {
      const { disabled, recovered } = await recordPushUrlOutcomes(db, outcomes, disableAfterSeconds)
      for (const { url, replayed } of recovered) {
        logger.info(
          { url: urlLabel(url), replayed },
          'push URL recovered: its deliveries that failed since it began failing are pending again',
        )
        onRecovered(replayed)
      }
      for (const { url, reason } of disabled) {
        logger.warn(
          { url: urlLabel(url), reason },
          'push URL disabled: its deliveries are held until it is enabled again',
        )
      }
      if (disabled.length > 0) onDisabled()
      return outcomes.map(() => undefined)
    })
  }

  /** Resolves once recorded; rejects when it could not be (logged, and the next attempts record theirs). */
  record(outcome: PushUrlOutcome): Promise<void> {
    const recorded = this.#record(outcome)
    this.#last = recorded.catch((error: unknown) =>
      this.logger.warn({ err: error, url: urlLabel(outcome.url) }, 'could not record the push URL health'),
    )
    return recorded
  }

  /** Settles once the last outcome given was recorded (or failed to be). */
  settled(): Promise<unknown> {
    return this.#last
  }
}
