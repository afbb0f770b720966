/**
 * Fault injection (issue 9, 3): the PostgreSQL server is stopped and started again while deliveries
 * flow. The platform must report itself not ready (503 on /readyz) while the database is gone, recover
 * by itself, and lose nothing. The server is a cluster of this test's own (initdb in a temporary
 * directory, its own port), so stopping it disturbs no other test.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { testBackends } from '@earshot/test-kit/backends'
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
import {
  type PostgresCluster,
  postgresBinDir,
  startPostgresCluster,
} from '@earshot/test-kit/postgres-cluster'

/** 1,000 recordings, every other one with its transcript: 1,500 deliveries. */
const RECORDINGS = 1000

const status = async (url: string): Promise<number> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) })
  await response.arrayBuffer()
  return response.status
}

// Runs where the PostgreSQL suites run, and needs the server binaries to make a cluster of its own.
if (testBackends.includes('postgres') && postgresBinDir()) {
  describe('postgres: the database server restarted while deliveries flow', () => {
    let cluster: PostgresCluster | undefined
    let platform: RestartablePlatform | undefined
    let receiver: LedgerReceiver | undefined
    let callbacks: CallbackQueue | undefined
    after(async () => {
      callbacks?.stop()
      await platform?.dispose()
      await receiver?.close()
      await cluster?.destroy()
    })

    test('/readyz is 503 while it is down, the platform recovers by itself, nothing is lost', {
      timeout: 240_000,
    }, async (t) => {
      const log = (line: string) => t.diagnostic(line)
      const random = seededRandom('postgres-restart', (line) => {
        console.log(line)
        log(line)
      })
      cluster = await startPostgresCluster()
      const database = cluster
      platform = await restartablePlatform({
        DATABASE_URL: database.url,
        EARSHOT_PUSH_ALLOW_PRIVATE: '1',
        EARSHOT_PUSH_TIMEOUT: '2',
        EARSHOT_PUSH_RETRY_SCHEDULE: '0.2,0.5,1,1,1,1,1,1,1,1,1,1,1,1,1',
        EARSHOT_PUSH_CONFIRM_WINDOW: '3',
        EARSHOT_RATE_LIMIT: '0',
      })
      const running = platform.current
      const readyz = () => status(`${running.partnerUrl}/readyz`)
      const healthz = () => status(`${running.partnerUrl}/healthz`)
      const alive = () => running.process.exitCode === null && running.process.signalCode === null
      const diagnose = (what: string) =>
        `${what}\n--- platform stderr ---\n${platform?.logs()}\n--- server log ---\n${database.log().slice(-4000)}`

      const credentials = await createEnterprise(running, 'Restarted database')
      callbacks = callbackQueue(() => running.partnerUrl, credentials)
      const queue = callbacks
      const acked = new Set<string>()
      receiver = await startLedgerReceiver(credentials.secret, {
        onAcked: (push) => {
          acked.add(push.eventId)
          queue.send(push.audioId)
        },
      })
      await setPushUrl(running, credentials.enterpriseId, receiver.url)
      const batch = recordingBatch('restart', RECORDINGS, (i) => i % 2 === 1)
      const { imported } = await importRecordings(running, credentials.enterpriseId, batch)
      assert.equal(imported, RECORDINGS)

      // 1. Stopped (fast: sessions cut) while deliveries flow; observed down; started again.
      const first = random.int(batch.events / 10, batch.events / 3)
      await waitFor(`${first} events acknowledged`, async () => acked.size >= first, { intervalMs: 5 })
      await database.stop('fast')
      const stoppedAt = performance.now()
      const ackedAtStop = acked.size
      await waitFor('/readyz 503 while the database is down', async () => (await readyz()) === 503)
      const notReadyAfterMs = performance.now() - stoppedAt
      assert.equal(await healthz(), 200, diagnose('healthz while the database is down'))
      assert.ok(alive(), diagnose('the platform process died while the database was down'))
      const downAcks = acked.size
      await database.start()
      const startedAt = performance.now()
      await waitFor('/readyz 200 once the database is back', async () => (await readyz()) === 200, {
        timeoutMs: 60_000,
      }).catch((error: Error) => assert.fail(diagnose(error.message)))
      const readyAfterMs = performance.now() - startedAt

      // 2. A quick `pg_ctl restart -m fast` a little later, while deliveries still flow.
      const second = Math.min(acked.size + random.int(50, 200), batch.events - 100)
      await waitFor(`${second} events acknowledged`, async () => acked.size >= second, {
        intervalMs: 5,
      }).catch((error: Error) => assert.fail(diagnose(error.message)))
      const ackedAtRestart = acked.size
      await database.restart('fast')
      await waitFor('/readyz 200 after the restart', async () => (await readyz()) === 200, {
        timeoutMs: 60_000,
      }).catch((error: Error) => assert.fail(diagnose(error.message)))

      const deliveries = await allInState(
        () => running,
        credentials.enterpriseId,
        'confirmed',
        batch.events,
        {
          timeoutMs: 120_000,
        },
      ).catch((error: Error) => assert.fail(diagnose(error.message)))
      assert.ok(alive(), diagnose('the platform process died'))
      assert.equal(platform.starts, 1, 'recovered without a restart of the platform')
      const report = reconcile(deliveries, receiver.pushes)
      log(
        `events ${batch.events}; stopped at ${ackedAtStop} acknowledged (/readyz 503 ${Math.round(notReadyAfterMs)} ms later, ` +
          `${downAcks} acknowledged by then), ready ${Math.round(readyAfterMs)} ms after the start; ` +
          `restarted (pg_ctl restart -m fast) at ${ackedAtRestart}; pushes received ${report.pushes}, ` +
          `duplicates ${report.duplicates}, lost ${report.lost.length}`,
      )
      log(`the platform logged: ${JSON.stringify(platform.problems())}`)
      assert.deepEqual(
        report.lost.map((d) => `${d.audioId} ${d.eventType}`),
        [],
        'every event acknowledged',
      )
      assert.deepEqual(report.unknownEventIds, [])
      assert.deepEqual(report.eventIdChanged, [])
    })
  })
}
