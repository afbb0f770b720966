import type { Logger } from '@earshot/support/logger'
import { PLATFORM_ACTOR } from '../audit/audit-trail.js'
import { auditedCall } from '../audit/audited-call.js'
import { takeDueRetention } from '../enterprises/enterprise-store.js'
import { anyRecordedBefore } from '../recordings/recording-erasure.js'
import type { Database } from '../storage/database.js'
import { createRetentionRun, retentionRunning } from './erasure-store.js'

/*
 * Retention policies: an enterprise whose policy is due (set or changed just now, or looked at 5 minutes
 * ago) is taken by one instance, which starts a retention run when it has recordings older than the policy
 * and none is running. The run is the platform's own change in the audit trail.
 */

/** How often each instance looks for a policy that is due: a policy just set is applied within this. */
const RETENTION_TICK_MS = 20_000

/** Starts the retention runs that are due now; answers how many it started. */
async function startDueRetentionRuns(db: Database, clock: () => number): Promise<number> {
  let started = 0
  for (;;) {
    const due = await takeDueRetention(db)
    if (!due) return started
    if (
      (await retentionRunning(db, due.enterpriseId)) ||
      !(await anyRecordedBefore(db, due.enterpriseId, due.cutoff))
    )
      continue
    await auditedCall(
      db,
      clock,
      {
        actor: PLATFORM_ACTOR,
        operation: 'runRetention',
        address: null,
        userAgent: null,
        target: { enterpriseId: due.enterpriseId },
        before: null,
        after: { recordedBefore: due.cutoff },
      },
      () => createRetentionRun(db, due.enterpriseId, due.cutoff, PLATFORM_ACTOR),
    )
    started++
  }
}

/** Looks for due policies every RETENTION_TICK_MS (and when woken), waking the runner when it started one. */
export function startRetention(options: {
  db: Database
  clock: () => number
  log: Logger
  onStarted: () => void
  tickMs?: number
}): { wake(): void; stop(): Promise<void> } {
  let looking: Promise<void> | undefined
  const look = () => {
    looking ??= startDueRetentionRuns(options.db, options.clock)
      .then((started) => {
        if (started > 0) options.onStarted()
      })
      .catch((error: unknown) =>
        options.log.warn({ err: error }, 'retention look-up failed; it is tried again'),
      )
      .finally(() => {
        looking = undefined
      })
  }
  const timer = setInterval(look, options.tickMs ?? RETENTION_TICK_MS)
  timer.unref()
  return {
    wake: look,
    async stop() {
      clearInterval(timer)
      await looking
    },
  }
}
