/**
 * Fault injection (issue 9, 1): the platform is killed with SIGKILL at 10 random moments while 2,000
 * deliveries are pushed to a real receiver, and restarted on the same storage each time. Black box:
 * child processes, the admin API, and what the receiver decrypted.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import {
  allInState,
  type CallbackQueue,
  callbackQueue,
  createEnterprise,
  importRecordings,
  type LedgerReceiver,
  reconcile,
  recordingBatch,
  seededRandom,
  setPushUrl,
  startLedgerReceiver,
  waitFor,
} from '@earshot/test-kit/fault-kit'
import { type RestartablePlatform, restartablePlatform } from '@earshot/test-kit/fault-platform'

/** 1,334 recordings, every odd one but the last with its transcript too: 1,334 + 666 = 2,000 events. */
const RECORDINGS = 1334
const withTranscript = (i: number) => i % 2 === 1 && i < RECORDINGS - 1
const KILLS = 10

for (const backend of testBackends) {
  describe(`${backend}: SIGKILL of the platform at ${KILLS} random moments during 2,000 pushes`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'earshot-faults-kill-'))
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

    test('every event acknowledged, every delivery confirmed, re-pushes keep their eventId', {
      timeout: 300_000,
    }, async (t) => {
      const log = (line: string) => t.diagnostic(line)
      const random = seededRandom(`delivery-kill ${backend}`, (line) => {
        console.log(line)
        log(line)
      })
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      platform = await restartablePlatform({
        ...(scratch ? { DATABASE_URL: scratch.url } : { EARSHOT_DATA_DIR: join(directory, 'data') }),
        EARSHOT_PUSH_ALLOW_PRIVATE: '1',
        EARSHOT_PUSH_TIMEOUT: '2',
        EARSHOT_PUSH_RETRY_SCHEDULE: '0.2,0.2,0.5,1,1,1,1,1,1,1,1,1',
        EARSHOT_PUSH_CONFIRM_WINDOW: '15',
        EARSHOT_RATE_LIMIT: '0',
      })
      const running = platform
      const credentials = await createEnterprise(running.current, 'Killed')
      callbacks = callbackQueue(() => running.current.partnerUrl, credentials)
      const queue = callbacks
      const acked = new Set<string>()
      receiver = await startLedgerReceiver(credentials.secret, {
        // A partner calls back after every push it acknowledges.
        onAcked: (push) => {
          acked.add(push.eventId)
          queue.send(push.audioId)
        },
      })
      await setPushUrl(running.current, credentials.enterpriseId, receiver.url)

      const batch = recordingBatch('kill', RECORDINGS, withTranscript)
      assert.equal(batch.events, 2000)
      const started = performance.now()
      const { imported } = await importRecordings(running.current, credentials.enterpriseId, batch)
      assert.equal(imported, RECORDINGS)

      // One kill moment in each tenth of the run, measured in events acknowledged so far.
      const moments = Array.from({ length: KILLS }, (_, i) =>
        Math.floor(batch.events * (0.02 + (0.9 * (i + random.next())) / KILLS)),
      )
      const kills: string[] = []
      for (const [i, moment] of moments.entries()) {
        await waitFor(`${moment} events acknowledged`, async () => acked.size >= moment, {
          intervalMs: 5,
          timeoutMs: 120_000,
        })
        const lag = random.int(0, 150)
        await new Promise((resolve) => setTimeout(resolve, lag))
        await running.kill()
        kills.push(`#${i + 1} at ${acked.size} acked (+${lag} ms)`)
        await running.start()
      }
      log(`kills: ${kills.join('; ')}`)

      const deliveries = await allInState(
        () => running.current,
        credentials.enterpriseId,
        'confirmed',
        batch.events,
        { timeoutMs: 180_000 },
      )
      const tookMs = performance.now() - started
      const report = reconcile(deliveries, receiver.pushes)
      log(
        `events ${report.events}, kills ${KILLS}, restarts ${running.starts - 1}, pushes received ${report.pushes}, ` +
          `duplicates seen by the receiver ${report.duplicates}, lost ${report.lost.length}, ` +
          `callbacks confirmed ${queue.confirmed()}, ${Math.round(tookMs)} ms from import to all confirmed`,
      )
      assert.deepEqual(
        report.lost.map((d) => `${d.audioId} ${d.eventType} ${d.eventId}: ${d.attempts.length} attempts`),
        [],
        'every event acknowledged by the receiver at least once',
      )
      assert.deepEqual(report.unknownEventIds, [], 'the receiver saw only eventIds the platform has')
      assert.deepEqual(report.eventIdChanged, [], 'a re-push keeps its eventId')
      assert.equal(report.mismatchedIds, 0, 'header, envelope and event carry the same eventId')
      assert.equal(new Set(deliveries.map((d) => `${d.audioId} ${d.eventType}`)).size, batch.events)
    })
  })
}
