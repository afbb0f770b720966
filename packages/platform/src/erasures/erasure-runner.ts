import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from '@earshot/support/logger'
import type { RecordingEvents } from '../recordings/recording-events.js'
import type { Database } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'
import {
  type ClaimedErasure,
  completeWhenAcknowledged,
  confirmWhenConfirmed,
  eraseNextBatch,
} from './erasure-steps.js'

/*
 * Runs erasures on every instance: each takes one whose lease has run out, works it under its lease, and
 * lets it go. An instance killed mid-way leaves its lease to run out; any instance then finishes the work.
 */

const REST_FACTOR = 4

export interface ErasureRunnerOptions {
  db: Database
  events: RecordingEvents
  log: Logger
  /** This runner's name in the lease; unique per process. */
  runner: string
  batchSize: number
  /** Recordings deleted a second at most. */
  perSecond: number
  leaseMs: number
  /** How long it waits idle before it looks again (another instance's new erasure). */
  idleMs?: number
  /** How long an erasure waiting for its partners' acknowledgements waits before it is looked at again. */
  waitMs?: number
}

export interface ErasureRunner {
  /** Looks for work now (an erasure was created, a policy changed) rather than at the next idle turn. */
  wake(): void
  stop(): Promise<void>
}

export function startErasureRunner(options: ErasureRunnerOptions): ErasureRunner {
  const idleMs = options.idleMs ?? 2000
  const abort = new AbortController()
  let wakeUp: (() => void) | undefined
  let woken = false
  const rest = async (ms: number) => {
    if (woken || abort.signal.aborted) {
      woken = false
      return
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      timer.unref()
      wakeUp = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    wakeUp = undefined
    woken = false
  }
  abort.signal.addEventListener('abort', () => wakeUp?.(), { once: true })
  const loop = (async () => {
    while (!abort.signal.aborted) {
      let worked = false
      try {
        worked = await runOne(options, abort.signal)
      } catch (error) {
        options.log.warn({ err: error }, 'an erasure step failed; it is tried again')
      }
      if (!worked) await rest(idleMs)
    }
  })()
  return {
    wake() {
      woken = true
      wakeUp?.()
    },
    async stop() {
      abort.abort()
      await loop
    },
  }
}

/** Takes one erasure with work to do and carries it as far as it can go now; false when there was none. */
async function runOne(options: ErasureRunnerOptions, signal: AbortSignal): Promise<boolean> {
  const { db, runner, leaseMs } = options
  const erasure = await claimErasure(db, runner, leaseMs)
  if (!erasure) return false
  let waitMs = 0
  while (!erasure.deleted && !signal.aborted) {
    const started = performance.now()
    const erased = await eraseNextBatch(db, erasure, { ...options, leaseMs })
    if (erased === undefined) return true
    if (erased === 0) erasure.deleted = true
    // Rest REST_FACTOR times as long as the batch took, and long enough to keep to the rate: the erasure takes
    // a fifth of the database's time at most, partner requests never queue behind a run of batches, and the
    // deletions it pushes add a bounded load.
    else {
      const tookMs = performance.now() - started
      const restMs = Math.max(REST_FACTOR * tookMs, (1000 * erased) / options.perSecond - tookMs)
      await sleep(restMs, undefined, { signal }).catch(() => {})
    }
  }
  if (erasure.deleted && !erasure.completed) {
    erasure.completed = await completeWhenAcknowledged(db, erasure, { runner, leaseMs })
    if (!erasure.completed) waitMs = options.waitMs ?? 2000
  }
  if (erasure.completed) await confirmWhenConfirmed(db, erasure.erasureId)
  await db.query(
    `UPDATE erasures SET claimed_by = NULL, lease_until = now() + make_interval(secs => $3::float8 / 1000)
      WHERE erasure_id = $1 AND claimed_by = $2`,
    [erasure.erasureId, runner, waitMs],
  )
  return true
}

async function claimErasure(
  db: Database,
  runner: string,
  leaseMs: number,
): Promise<ClaimedErasure | undefined> {
  const [row] = await db.query<ClaimedErasure>(
    `UPDATE erasures SET claimed_by = $1, lease_until = now() + make_interval(secs => $2::float8 / 1000)
      WHERE erasure_id = (SELECT erasure_id FROM erasures
                           WHERE (completed_at IS NULL OR (confirmations_changed AND confirmed_at IS NULL))
                             AND (lease_until IS NULL OR lease_until < now() OR claimed_by = $1)
                           ORDER BY erasure_id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING erasure_id AS "erasureId", enterprise_id AS "enterpriseId", kind,
                ${isoTime('cutoff')} AS cutoff,
                deleted_at IS NOT NULL AS deleted, completed_at IS NOT NULL AS completed`,
    [runner, leaseMs],
  )
  return row && { ...row, erasureId: Number(row.erasureId), enterpriseId: Number(row.enterpriseId) }
}
