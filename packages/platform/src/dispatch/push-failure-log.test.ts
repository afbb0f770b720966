import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { LogCapture, LogLevel, type LogLine } from '@earshot/test-kit/log-capture'
import { closedPort } from '@earshot/test-kit/run-cli'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { listDeliveries } from '../deliveries/delivery-views.js'

/*
 * A failed push attempt is a warning in the server log an operator can act on: the push URL without its
 * query string, the HTTP status (and the code answered) or the error, the eventId and the deliveryId,
 * and what comes next. Never the body pushed, what the partner answered beyond that, or a secret.
 */

const QUERY_SECRET = 'query-secret-3f9a'
const TITLE = 'title-never-logged-71c2'
const ANSWER_TEXT = 'answer-never-logged-5d0e'

const failed = (line: LogLine) => line.msg === 'push attempt failed'

for (const backend of testBackends) {
  describe(`${backend}: a failed push attempt in the log`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    const logs = new LogCapture()
    const receivers: TestReceiver[] = []

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { logLevel: 'warn', pushRetryScheduleSeconds: [0.1, 0.1], pushTimeoutSeconds: 2 },
        { logDestination: logs.destination },
      )
    })
    after(async () => {
      for (const receiver of receivers) await receiver.close()
      await platform?.stop()
    })

    async function withPushUrl(partner: TestPartner, pushUrl: string): Promise<void> {
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl },
      })
    }

    const linesOf = (eventId: string) => logs.lines.filter((line) => failed(line) && line.eventId === eventId)

    test('a receiver answering 500: one warning per attempt, with URL, status, eventId and deliveryId', async () => {
      const partner = await createPartner(platform)
      const receiver = await startTestReceiver(partner.secret, {
        answer: () => ({ status: 500, body: { code: 5000, msg: ANSWER_TEXT } }),
      })
      receivers.push(receiver)
      await withPushUrl(partner, `${receiver.url}?token=${QUERY_SECRET}`)
      const audioId = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'DEV-LOG',
        title: TITLE,
        recordedAt: '2026-03-01T10:00:00Z',
        denoiseUrl: 'https://media.example/log.mp3',
        recordDuration: 61_000,
      })

      // Three attempts (the first and two retries), then the delivery is failed.
      const [delivery] = await eventually(
        async () => {
          const deliveries = await listDeliveries(platform.context.db, { audioId, limit: 10 })
          return deliveries.length === 1 && deliveries[0]?.state === 'failed' && deliveries
        },
        20_000,
        'the delivery failed',
      )
      assert.ok(delivery)
      const lines = await eventually(
        async () => linesOf(delivery.eventId).length === 3 && linesOf(delivery.eventId),
        5_000,
        'a warning for each of the three attempts',
      )
      for (const line of lines) {
        assert.equal(line.level, LogLevel.warn)
        assert.equal(line.url, receiver.url, 'the push URL, without its query string')
        assert.equal(line.deliveryId, delivery.deliveryId)
        assert.equal(line.eventId, delivery.eventId)
        assert.equal(line.eventType, 'recording.audio_ready')
        assert.equal(line.enterpriseId, partner.enterpriseId)
        assert.equal(line.httpStatus, 500)
        assert.equal(line.responseCode, 5000)
        assert.equal(line.error, 'HTTP 500')
      }
      assert.deepEqual(
        lines.map((line) => line.next),
        ['retry in 0.1 s', 'retry in 0.1 s', 'failed: its retry schedule is spent'],
      )
      assert.equal(receiver.received.length, 3)

      // Nothing of the body, of the partner's answer, or of any secret, on any line.
      const text = logs.text.join('\n')
      const pushed = receiver.received[0]?.envelope
      assert.ok(pushed)
      for (const secret of [
        QUERY_SECRET,
        partner.secret,
        TITLE,
        ANSWER_TEXT,
        pushed.ciphertext,
        pushed.nonce,
        pushed.tag,
        platform.adminToken,
      ]) {
        assert.ok(!text.includes(secret), `the log holds ${secret}`)
      }
    })

    test('a push URL nobody listens on: the warning names the error, without an HTTP status', async () => {
      const partner = await createPartner(platform)
      const port = await closedPort()
      await withPushUrl(partner, `http://127.0.0.1:${port}/earshot/push?sig=${QUERY_SECRET}`)
      const audioId = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'DEV-LOG',
        title: TITLE,
        recordedAt: '2026-03-01T11:00:00Z',
        denoiseUrl: 'https://media.example/refused.mp3',
        recordDuration: 1_000,
      })
      const [delivery] = await eventually(
        async () => {
          const deliveries = await listDeliveries(platform.context.db, { audioId, limit: 10 })
          return deliveries.length === 1 && (deliveries[0]?.attempts.length ?? 0) > 0 && deliveries
        },
        20_000,
        'an attempt',
      )
      assert.ok(delivery)
      const line = await logs.waitFor((each) => failed(each) && each.eventId === delivery.eventId)
      assert.equal(line.level, LogLevel.warn)
      assert.equal(line.url, `http://127.0.0.1:${port}/earshot/push`)
      assert.equal(line.deliveryId, delivery.deliveryId)
      assert.equal(line.httpStatus, undefined)
      assert.match(String(line.error), /ECONNREFUSED/)
      assert.match(String(line.next), /^retry in 0\.1 s$/)
      assert.ok(!logs.text.join('\n').includes(QUERY_SECRET))
    })
  })
}
