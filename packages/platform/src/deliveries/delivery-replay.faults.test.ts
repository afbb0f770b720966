/**
 * Fault injection (issue 9, 4): the partner is down for the whole (compressed) retry schedule, every
 * delivery ends `failed`; an operator replays the time range and every delivery is confirmed, under
 * its own eventId. Black box: a child process, the admin API, and what the receiver got.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import {
  adminClientOf,
  allInState,
  type CallbackQueue,
  callbackQueue,
  createEnterprise,
  importRecordings,
  type LedgerReceiver,
  reconcile,
  recordingBatch,
  setPushUrl,
  startLedgerReceiver,
} from '@earshot/test-kit/fault-kit'
import { type RestartablePlatform, restartablePlatform } from '@earshot/test-kit/fault-platform'

/** 200 recordings, every other one with its transcript: 300 deliveries. */
const RECORDINGS = 200
const SCHEDULE = [0.2, 0.3, 0.5]

for (const backend of testBackends) {
  describe(`${backend}: the partner down for the whole retry schedule, then an operator replay`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'earshot-faults-replay-'))
    let scratch: ScratchDatabase | undefined
    let platform: RestartablePlatform | undefined
    let receiver: LedgerReceiver | undefined
    let callbacks: CallbackQueue | undefined
    after(async () => {
      callbacks?.stop()
      await platform?.dispose()
      await receiver?.close()
      await scratch?.drop()
      rmSync(directory, { recursive: true, force: true })
    })

    test('every delivery failed after the schedule; replayed by time range, every one confirmed', {
      timeout: 180_000,
    }, async (t) => {
      const log = (line: string) => t.diagnostic(line)
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      platform = await restartablePlatform({
        ...(scratch ? { DATABASE_URL: scratch.url } : { EARSHOT_DATA_DIR: join(directory, 'data') }),
        EARSHOT_PUSH_ALLOW_PRIVATE: '1',
        EARSHOT_PUSH_TIMEOUT: '2',
        EARSHOT_PUSH_RETRY_SCHEDULE: SCHEDULE.join(','),
        EARSHOT_PUSH_CONFIRM_WINDOW: '5',
        EARSHOT_RATE_LIMIT: '0',
      })
      const running = platform.current
      const credentials = await createEnterprise(running, 'Down for a while')
      callbacks = callbackQueue(() => running.partnerUrl, credentials)
      const queue = callbacks
      receiver = await startLedgerReceiver(credentials.secret, {
        onAcked: (push) => queue.send(push.audioId),
      })
      await setPushUrl(running, credentials.enterpriseId, receiver.url)
      // Down: nothing listens on the push URL's port.
      await receiver.stop()

      const from = new Date(Date.now() - 60_000).toISOString()
      const batch = recordingBatch('down', RECORDINGS, (i) => i % 2 === 1)
      const started = performance.now()
      const { imported } = await importRecordings(running, credentials.enterpriseId, batch)
      assert.equal(imported, RECORDINGS)
      const failed = await allInState(() => running, credentials.enterpriseId, 'failed', batch.events)
      const failedAfterMs = performance.now() - started
      const attempts = failed.flatMap((d) => d.attempts)
      assert.deepEqual(
        failed.filter((d) => d.attempts.length !== SCHEDULE.length + 1).map((d) => d.audioId),
        [],
        'the first attempt and one per schedule step',
      )
      assert.ok(attempts.every((a) => a.outcome === 'failed' && /ECONNREFUSED/.test(a.error ?? '')))
      assert.equal(receiver.pushes.length, 0)

      // The partner is back; the operator replays the day.
      await receiver.start()
      const to = new Date(Date.now() + 60_000).toISOString()
      const replay = await adminClientOf(running).replayDeliveries(credentials.enterpriseId, from, to)
      assert.deepEqual(replay, { enterpriseId: credentials.enterpriseId, replayed: batch.events })
      const replayedAt = performance.now()
      const deliveries = await allInState(() => running, credentials.enterpriseId, 'confirmed', batch.events)
      const confirmedAfterMs = performance.now() - replayedAt
      const report = reconcile(deliveries, receiver.pushes)
      log(
        `events ${batch.events}, failed attempts before the replay ${attempts.length}, replayed ${replay.replayed}, ` +
          `pushes received ${report.pushes}, duplicates ${report.duplicates}, lost ${report.lost.length}; ` +
          `all failed ${Math.round(failedAfterMs)} ms after the import, all confirmed ${Math.round(confirmedAfterMs)} ms after the replay`,
      )
      assert.deepEqual(
        report.lost.map((d) => `${d.audioId} ${d.eventType}`),
        [],
        'every event acknowledged',
      )
      assert.deepEqual(report.unknownEventIds, [])
      assert.deepEqual(report.eventIdChanged, [])
      // Replayed with the eventIds they failed with.
      const before = new Map(failed.map((d) => [d.deliveryId, d.eventId]))
      assert.ok(deliveries.every((d) => before.get(d.deliveryId) === d.eventId))
    })
  })
}
