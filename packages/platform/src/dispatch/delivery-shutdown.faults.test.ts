/**
 * Fault injection (issue 9, 2): two platform instances on one PostgreSQL push to a receiver that
 * answers after 3 s; one of them is stopped with SIGTERM (EARSHOT_SHUTDOWN_GRACE=1) mid-run, so some
 * of its attempts finish within the grace and the rest are aborted and handed back. Black box: child
 * processes, the admin API, and what the receiver got.
 */
import assert from 'node:assert/strict'
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
  tcpPortsOf,
  waitFor,
} from '@earshot/test-kit/fault-kit'
import { type RestartablePlatform, restartablePlatform } from '@earshot/test-kit/fault-platform'

const DELIVERIES = 300
const ANSWER_DELAY_MS = 3000

if (testBackends.includes('postgres')) {
  describe('postgres: one of two instances stopped with SIGTERM while a slow receiver answers', () => {
    let scratch: ScratchDatabase | undefined
    const instances: RestartablePlatform[] = []
    let receiver: LedgerReceiver | undefined
    let callbacks: CallbackQueue | undefined
    after(async () => {
      callbacks?.stop()
      for (const instance of instances) await instance.dispose()
      await receiver?.close()
      await scratch?.drop()
    })

    test('no attempt recorded twice or lost, no delivery moved by a stale claim, aborted attempts are not acks', {
      timeout: 240_000,
    }, async (t) => {
      const log = (line: string) => t.diagnostic(line)
      const random = seededRandom('delivery-shutdown', (line) => {
        console.log(line)
        log(line)
      })
      scratch = await scratchPostgresDatabase()
      const env = {
        DATABASE_URL: scratch.url,
        EARSHOT_PUSH_ALLOW_PRIVATE: '1',
        EARSHOT_PUSH_TIMEOUT: '6',
        EARSHOT_PUSH_RETRY_SCHEDULE: '0.2,0.5,1,1,1,1,1,1,1,1',
        EARSHOT_PUSH_CONFIRM_WINDOW: '30',
        EARSHOT_PUSH_CONCURRENCY: '64',
        EARSHOT_PUSH_CONCURRENCY_PER_URL: '48',
        EARSHOT_SHUTDOWN_GRACE: '1',
        EARSHOT_RATE_LIMIT: '0',
      }
      const stopped = await restartablePlatform(env)
      instances.push(stopped)
      const staying = await restartablePlatform(env)
      instances.push(staying)
      const credentials = await createEnterprise(staying.current, 'Slow partner')
      callbacks = callbackQueue(() => staying.current.partnerUrl, credentials)
      const queue = callbacks
      receiver = await startLedgerReceiver(credentials.secret, {
        answerDelayMs: ANSWER_DELAY_MS,
        onAcked: (push) => queue.send(push.audioId),
      })
      const slow = receiver
      await setPushUrl(staying.current, credentials.enterpriseId, slow.url)

      // Audio parts only: one event per recording, so every delivery is confirmed by its own callback.
      const batch = recordingBatch('slow', DELIVERIES)
      const { imported } = await importRecordings(staying.current, credentials.enterpriseId, batch)
      assert.equal(imported, DELIVERIES)

      // Mid-run: after a random share of the answers, at a moment when the instance to stop has a push
      // open that arrived less than a second ago — it cannot be answered within the 1 s grace.
      const moment = random.int(DELIVERIES / 5, DELIVERIES / 2)
      const pid = stopped.current.process.pid as number
      await waitFor(
        `${moment} answers, and a fresh push of the instance to stop`,
        async () => {
          if (slow.pushes.length < moment) return false
          const ports = tcpPortsOf(pid)
          const now = performance.now()
          return slow.open().some((push) => ports.has(push.remotePort) && now - push.arrivedAt < 800)
        },
        { intervalMs: 5 },
      )
      const openAtStop = slow.pending()
      const exit = await stopped.terminate()
      log(`SIGTERM after ${slow.pushes.length} answers, with ${openAtStop} pushes open; exit ${exit}`)
      assert.equal(exit, 0, stopped.logs())

      await allInState(() => staying.current, credentials.enterpriseId, 'confirmed', DELIVERIES)
      await waitFor('the receiver has answered every push it got', async () => slow.pending() === 0)
      // Listed again now that every answer is in: the attempts as finally recorded.
      const deliveries = await allInState(
        () => staying.current,
        credentials.enterpriseId,
        'confirmed',
        DELIVERIES,
      )
      const report = reconcile(deliveries, slow.pushes)

      const pushesOf = new Map<string, { all: number; delivered: number }>()
      for (const push of slow.pushes) {
        const counts = pushesOf.get(push.eventId) ?? { all: 0, delivered: 0 }
        counts.all++
        if (push.delivered) counts.delivered++
        pushesOf.set(push.eventId, counts)
      }
      const notRecordedOnce: string[] = []
      const reusedNumbers: string[] = []
      const ackedWithoutAnswer: string[] = []
      const movedByStaleClaim: string[] = []
      let aborted = 0
      for (const delivery of deliveries) {
        const pushes = pushesOf.get(delivery.eventId) ?? { all: 0, delivered: 0 }
        const numbers = delivery.attempts.map((a) => a.attemptNo)
        const acks = delivery.attempts.filter((a) => a.outcome === 'acked').length
        const describe = () =>
          `${delivery.audioId}: receiver got ${pushes.all} pushes (${pushes.delivered} answers delivered); ` +
          `attempts ${JSON.stringify(delivery.attempts.map((a) => [a.attemptNo, a.outcome, a.error, a.nextAttemptAt]))}`
        // The receiver is up and answers within the timeout: each push is exactly one recorded attempt.
        if (delivery.attempts.length !== pushes.all) notRecordedOnce.push(describe())
        if (new Set(numbers).size !== numbers.length) reusedNumbers.push(describe())
        // An ack counts only for an answer that reached the platform on an open connection.
        if (acks > pushes.delivered || acks === 0) ackedWithoutAnswer.push(describe())
        for (const attempt of delivery.attempts) {
          if (attempt.outcome === 'acked') continue
          aborted++
          // Handed back at shutdown: logged, but it schedules (moves) nothing.
          if (attempt.nextAttemptAt !== null) movedByStaleClaim.push(describe())
        }
      }
      const undelivered = slow.pushes.filter((push) => !push.delivered).length
      log(
        `deliveries ${DELIVERIES}, pushes received ${report.pushes}, duplicates ${report.duplicates}, ` +
          `answers to closed connections ${undelivered}, attempts not acked (aborted by the stop) ${aborted}, ` +
          `lost ${report.lost.length}, callbacks confirmed ${queue.confirmed()}`,
      )
      assert.deepEqual(
        report.lost.map((d) => d.audioId),
        [],
        'each event acknowledged (an answer delivered) at least once',
      )
      assert.deepEqual(reusedNumbers, [], 'attempt numbers distinct within each delivery')
      assert.deepEqual(notRecordedOnce, [], 'every push the receiver got is recorded as one attempt')
      assert.deepEqual(ackedWithoutAnswer, [], 'aborted attempts are not counted as acks')
      assert.deepEqual(movedByStaleClaim, [], 'no delivery moved by a handed-back (stale) claim')
      assert.deepEqual(report.unknownEventIds, [])
      assert.deepEqual(report.eventIdChanged, [])
      assert.ok(undelivered > 0, 'the stop aborted attempts in flight (the scenario happened)')
    })
  })
}
