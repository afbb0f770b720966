import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { isTranscriptData, PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, adminRefusal, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import {
  callbackSender,
  type ReceiverBehaviour,
  startTestReceiver,
  type TestReceiver,
} from '@earshot/test-kit/test-receiver'
import type { PlatformConfig } from '../config/config.js'
import { type DeliveryState, pruneConfirmedDeliveries } from '../deliveries/delivery-store.js'
import { type DeliveryView, getDelivery, listDeliveries } from '../deliveries/delivery-views.js'

/** The push timings, compressed: 3 retries, a short confirm window and timeout. */
const compressed: Partial<PlatformConfig> = {
  pushRetryScheduleSeconds: [0.2, 0.2, 0.3],
  pushConfirmWindowSeconds: 0.4,
  pushTimeoutSeconds: 0.5,
}

let recordingCounter = 0
const recording = () => ({
  deviceUid: 'DEV-PUSH',
  title: `push test ${++recordingCounter}`,
  recordedAt: '2026-03-01T10:00:00+08:00',
  denoiseUrl: `https://media.example/${recordingCounter}.mp3`,
  recordDuration: 61_000,
})

for (const backend of testBackends) {
  describe(`${backend}: push delivery`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    const receivers: TestReceiver[] = []
    before(async () => {
      platform = await startTestPlatform(backend, compressed)
    })
    after(async () => {
      for (const receiver of receivers) await receiver.close()
      await platform.stop()
    })

    /** A new enterprise whose push URL is a fresh receiver with the given behaviour. */
    async function partnerWithReceiver(
      behaviour: (partner: TestPartner, callback: (audioId: string) => Promise<void>) => ReceiverBehaviour,
    ) {
      const partner = await createPartner(platform)
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const receiver = await startTestReceiver(partner.secret, behaviour(partner, callback))
      receivers.push(receiver)
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: receiver.url },
      })
      return { partner, receiver, callback }
    }

    const deliveriesOf = (audioId: string) => listDeliveries(platform.context.db, { audioId, limit: 10 })
    const inState = async (audioId: string, state: DeliveryState, count = 1) => {
      const deliveries = await deliveriesOf(audioId)
      return deliveries.length === count && deliveries.every((d) => d.state === state) && deliveries
    }

    test('happy path: push → ack → callback → confirmed; the payload is a push event', async () => {
      const { partner, receiver } = await partnerWithReceiver((_partner, callback) => ({
        afterAnswer: (push) => void callback(push.event.audioId),
      }))
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const [delivery] = await eventually(() => inState(audioId, 'confirmed'), 10_000, 'confirmed')
      assert.ok(delivery)

      assert.equal(receiver.received.length, 1)
      const push = receiver.received[0]
      assert.ok(push)
      assert.equal(push.event.eventId, delivery.eventId)
      assert.equal(push.headerEventId, delivery.eventId)
      assert.equal(push.envelope.eventId, delivery.eventId)
      assert.equal(push.envelope.keyVersion, 1)
      assert.equal(push.event.eventType, PushEventType.AUDIO_READY)
      assert.equal(push.event.audioId, audioId)
      assert.match(push.event.occurredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.deepEqual(push.event.data, {
        deviceUid: 'DEV-PUSH',
        title: `push test ${recordingCounter}`,
        recordedAt: '2026-03-01T02:00:00.000Z',
        denoiseUrl: `https://media.example/${recordingCounter}.mp3`,
        recordDuration: 61_000,
      })
      assert.equal(delivery.attempts.length, 1)
      assert.equal(delivery.attempts[0]?.outcome, 'acked')
      assert.equal(delivery.attempts[0]?.httpStatus, 200)
      assert.equal(delivery.attempts[0]?.responseCode, 2000)
      assert.ok(delivery.confirmedAt)

      // Attaching the transcript is a second event, with set A as its data.
      await adminCall(platform, 'attachTranscript', {
        params: { enterpriseId: partner.enterpriseId, audioId },
        body: {
          transcriptId: 7,
          transcriptText: 'hello there',
          sentences: [{ text: 'hello there', beginTime: 0, endTime: 900 }],
          durationMs: 900,
          wordsCount: 2,
        },
      })
      await eventually(() => inState(audioId, 'confirmed', 2), 10_000, 'both events confirmed')
      const transcriptPush = receiver.received[1]
      assert.equal(transcriptPush?.event.eventType, PushEventType.TRANSCRIPT_READY)
      assert.notEqual(transcriptPush?.event.eventId, push.event.eventId)
      assert.ok(transcriptPush && isTranscriptData(transcriptPush.event.data))
      assert.equal(
        transcriptPush.event.data.transcriptSentences,
        '[{"text":"hello there","beginTime":0,"endTime":900}]',
      )
    })

    test('500, then a timeout, then 200 with code 5000, then 2000: each attempt recorded, retried on the schedule', async () => {
      const answers = [
        { status: 500, body: { code: 5000 } },
        'hang' as const,
        { status: 200, body: { code: 5000 } },
        { status: 200, body: { code: 2000 } },
      ]
      const { partner, receiver } = await partnerWithReceiver((_partner, callback) => ({
        answer: (_push, n) => answers[n] ?? { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if ((answer.body as { code: number }).code === 2000) void callback(push.event.audioId)
        },
      }))
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const [delivery] = await eventually(() => inState(audioId, 'confirmed'), 15_000, 'confirmed')
      assert.ok(delivery)
      const attempts = delivery.attempts
      assert.deepEqual(
        attempts.map((a) => [a.attemptNo, a.outcome, a.httpStatus, a.responseCode]),
        [
          [1, 'failed', 500, 5000],
          [2, 'failed', null, null],
          [3, 'failed', 200, 5000],
          [4, 'acked', 200, 2000],
        ],
      )
      assert.equal(attempts[0]?.error, 'HTTP 500')
      assert.match(attempts[1]?.error ?? '', /no answer within 0.5 s/)
      assert.equal(attempts[2]?.error, 'response code 5000')
      assert.ok((attempts[1]?.durationMs ?? 0) >= 450, 'the timeout ended the hanging attempt')
      // Every failed attempt names its next attempt; the gaps follow the schedule, ±10% jitter.
      const schedule = compressed.pushRetryScheduleSeconds as number[]
      for (let i = 0; i < 3; i++) {
        const failed = attempts[i]
        const next = attempts[i + 1]
        assert.ok(failed?.nextAttemptAt && next)
        const planned = Date.parse(failed.nextAttemptAt) - (Date.parse(failed.startedAt) + failed.durationMs)
        assert.ok(
          planned >= (schedule[i] as number) * 900 - 50 && planned <= (schedule[i] as number) * 1100 + 50,
          `retry ${i + 1} planned ${planned} ms after the failure`,
        )
        assert.ok(
          Date.parse(next.startedAt) >= Date.parse(failed.nextAttemptAt) - 20,
          'not attempted before due',
        )
      }
      assert.equal(new Set(receiver.received.map((p) => p.event.eventId)).size, 1, 'one eventId throughout')
    })

    test('receiver down for the whole schedule → failed; replay → delivered and confirmed', async () => {
      const { partner, receiver } = await partnerWithReceiver((_partner, callback) => ({
        afterAnswer: (push) => void callback(push.event.audioId),
      }))
      await receiver.stop()
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const [failed] = await eventually(() => inState(audioId, 'failed'), 15_000, 'failed')
      assert.ok(failed)
      assert.equal(failed.attempts.length, 4, 'the first attempt and one per schedule step')
      assert.ok(failed.attempts.every((a) => a.outcome === 'failed' && /ECONNREFUSED/.test(a.error ?? '')))
      assert.equal(failed.attempts.at(-1)?.nextAttemptAt, null)
      assert.equal(failed.nextAttemptAt, null)

      await receiver.start()
      await adminCall(platform, 'replayDelivery', { params: { deliveryId: failed.deliveryId } })
      const [confirmed] = await eventually(
        () => inState(audioId, 'confirmed'),
        10_000,
        'confirmed after replay',
      )
      assert.equal(confirmed?.attempts.at(-1)?.outcome, 'acked')
      assert.equal(receiver.received[0]?.event.eventId, failed.eventId)
    })

    test('a huge answer is cut off after 4 KiB and counts as a failed attempt', async () => {
      const { partner } = await partnerWithReceiver(() => ({
        answer: (_push, n) =>
          n === 0
            ? { status: 200, body: { code: 2000, padding: 'x'.repeat(1_000_000) } }
            : { status: 200, body: { code: 2000 } },
      }))
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const [delivery] = await eventually(
        () => inState(audioId, 'acked'),
        10_000,
        'acked on the second attempt',
      )
      assert.deepEqual(
        delivery?.attempts.map((a) => [a.outcome, a.error]),
        [
          ['failed', 'response body over 4096 bytes'],
          ['acked', null],
        ],
      )
    })

    test('acked but never called back → re-pushed 3 times with the same eventId → unconfirmed', async () => {
      const { partner, receiver } = await partnerWithReceiver(() => ({}))
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const [delivery] = await eventually(() => inState(audioId, 'unconfirmed'), 15_000, 'unconfirmed')
      assert.ok(delivery)
      assert.equal(receiver.received.length, 4, 'the push and 3 re-pushes')
      assert.deepEqual(new Set(receiver.received.map((p) => p.event.eventId)), new Set([delivery.eventId]))
      assert.equal(new Set(receiver.received.map((p) => p.envelope.nonce)).size, 4, 'each push sealed afresh')
      assert.ok(delivery.attempts.every((a) => a.outcome === 'acked'))
      // Each re-push waited out the confirm window after the previous ack.
      for (let i = 1; i < receiver.received.length; i++) {
        const gap = (receiver.received[i]?.at ?? 0) - (receiver.received[i - 1]?.at ?? 0)
        assert.ok(gap >= 350, `re-push ${i} came ${gap} ms after the previous push`)
      }
      // A late callback still confirms it.
      const reply = await partner.call('/openapi/v1/callback', { audioId })
      assert.equal(reply.body.code, 2000)
      assert.equal((await getDelivery(platform.context.db, delivery.deliveryId))?.state, 'confirmed')
    })

    test('a callback that overtakes the ack confirms the delivery when the ack is recorded', async () => {
      let whileInFlight: DeliveryView | undefined
      const { partner } = await partnerWithReceiver((_partner, callback) => ({
        // The partner calls back first and answers the push only afterwards.
        async answer(push) {
          await callback(push.event.audioId)
          whileInFlight = (await deliveriesOf(push.event.audioId))[0]
          return { status: 200, body: { code: 2000 } }
        },
      }))
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const [confirmed] = await eventually(
        async () =>
          (await inState(audioId, 'confirmed')) &&
          (await deliveriesOf(audioId))[0]?.attempts.length === 1 &&
          deliveriesOf(audioId),
        10_000,
        'confirmed with its attempt recorded',
      )
      assert.equal(whileInFlight?.state, 'in_flight', 'not confirmed before its ack')
      assert.equal(confirmed?.attempts[0]?.outcome, 'acked')
      assert.equal(confirmed?.confirmedAt, confirmed?.ackedAt, 'confirmed by recording the ack')
      assert.equal(confirmed?.nextAttemptAt, null, 'final: no re-push is due')
    })

    test('a callback confirms only acknowledged events: a refused one is pushed again, acked, then confirmed', async () => {
      const { partner, receiver } = await partnerWithReceiver((_partner, callback) => ({
        // The first push the partner sees is refused; it acks every later one, then calls back.
        answer: (_push, n) =>
          n === 0 ? { status: 503, body: { code: 5030 } } : { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if ((answer.body as { code: number }).code === 2000) void callback(push.event.audioId)
        },
      }))
      const audioId = await ingest(platform, partner.enterpriseId, {
        ...recording(),
        transcript: {
          transcriptId: 11,
          transcriptText: 'both parts',
          sentences: [{ text: 'both parts', beginTime: 0, endTime: 500 }],
          durationMs: 500,
          wordsCount: 2,
        },
      })
      const deliveries = await eventually(() => inState(audioId, 'confirmed', 2), 15_000, 'both confirmed')
      const refused = receiver.received[0]?.event.eventId
      const acked = new Set(receiver.received.slice(1).map((push) => push.event.eventId))
      assert.deepEqual(acked, new Set(deliveries.map((d) => d.eventId)), 'both events acked by the receiver')
      for (const delivery of deliveries) {
        assert.ok(delivery.ackedAt && delivery.confirmedAt, `${delivery.eventType} acked and confirmed`)
        assert.ok(delivery.confirmedAt >= delivery.ackedAt, 'confirmed no earlier than acked')
        assert.equal(delivery.attempts.at(-1)?.outcome, 'acked')
      }
      // Acked and not yet confirmed within the 0.4 s confirm window, it may be pushed once more: still acked.
      const [first, ...again] = deliveries.find((d) => d.eventId === refused)?.attempts ?? []
      assert.equal(first?.outcome, 'failed', 'the first push was refused')
      assert.ok(again.length > 0, 'the refused event was pushed again as scheduled')
      assert.deepEqual(new Set(again.map((a) => a.outcome)), new Set(['acked']), 'and acked each time after')
    })

    test('no push URL, no delivery; metrics count deliveries still moving and attempts', async () => {
      const partner = await createPartner(platform)
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      assert.deepEqual(await deliveriesOf(audioId), [])

      const pushed = await partnerWithReceiver((_partner, callback) => ({
        afterAnswer: (push) => void callback(push.event.audioId),
      }))
      const pushedId = await ingest(platform, pushed.partner.enterpriseId, recording())
      await eventually(() => inState(pushedId, 'confirmed'), 10_000, 'confirmed')

      const response = await fetch(`${platform.adminUrl}/metrics`, {
        headers: { authorization: `Bearer ${platform.adminToken}` },
      })
      assert.equal(response.status, 200)
      const text = await response.text()
      for (const state of ['pending', 'in_flight', 'acked', 'failed', 'unconfirmed'])
        assert.match(text, new RegExp(`^earshot_deliveries\\{state="${state}"\\} \\d+$`, 'm'))
      assert.doesNotMatch(
        text,
        /^earshot_deliveries\{state="confirmed"\}/m,
        'history is not counted per scrape',
      )
      assert.match(text, /^earshot_push_attempts_total\{result="acked"\} [1-9]\d*$/m)
      assert.match(text, /^earshot_push_attempts_total\{result="timeout"\} \d+$/m)
      assert.match(text, /^earshot_push_duration_seconds_bucket\{le="\+Inf",result="acked"\} [1-9]\d*$/m)
      assert.match(text, /^earshot_push_queue_depth \d+$/m)
      assert.match(
        text,
        /^earshot_http_requests_total\{listener="partner",method="POST",route="\/openapi\/v1\/callback",status="200"\} [1-9]\d*$/m,
      )
      const anonymous = await fetch(`${platform.adminUrl}/metrics`)
      assert.equal(anonymous.status, 401)
    })

    test('retention: confirmed deliveries and their attempts are pruned; failed ones are kept for replay', async () => {
      const confirmed = await partnerWithReceiver((_partner, callback) => ({
        afterAnswer: (push) => void callback(push.event.audioId),
      }))
      const confirmedId = await ingest(platform, confirmed.partner.enterpriseId, recording())
      const [done] = await eventually(() => inState(confirmedId, 'confirmed'), 10_000, 'confirmed')
      const refused = await partnerWithReceiver(() => ({
        answer: () => ({ status: 500, body: { code: 5000 } }),
      }))
      const failedId = await ingest(platform, refused.partner.enterpriseId, recording())
      await eventually(() => inState(failedId, 'failed'), 15_000, 'failed')

      const db = platform.context.db
      assert.equal(await pruneConfirmedDeliveries(db, 3600), 0, 'nothing confirmed an hour ago')
      assert.ok((await pruneConfirmedDeliveries(db, 0)) >= 1)
      assert.deepEqual(await deliveriesOf(confirmedId), [])
      const [attempts] = await db.query<{ count: number }>(
        'SELECT count(*) AS count FROM delivery_attempts WHERE delivery_id = $1',
        [done?.deliveryId],
      )
      assert.equal(attempts?.count, 0)
      assert.ok(await inState(failedId, 'failed'), 'the failed delivery is still there')
    })

    test('a stored secret that fails to load: failed attempts with its error, nothing unhandled, others pushed', async () => {
      const unhandled: unknown[] = []
      const onUnhandled = (reason: unknown) => unhandled.push(reason)
      process.on('unhandledRejection', onUnhandled)
      try {
        const { partner, receiver } = await partnerWithReceiver(() => ({}))
        await platform.context.db.query(
          `UPDATE enterprise_keys SET secret = 'bad' WHERE enterprise_id = $1`,
          [partner.enterpriseId],
        )
        const audioId = await ingest(platform, partner.enterpriseId, recording())
        const [failed] = await eventually(() => inState(audioId, 'failed'), 15_000, 'failed')
        assert.equal(failed?.attempts.length, 4, 'the first attempt and one per schedule step')
        for (const attempt of failed?.attempts ?? []) {
          assert.equal(attempt.outcome, 'failed')
          assert.equal(attempt.httpStatus, null)
          assert.match(attempt.error ?? '', /^a secret must be 44 characters of standard Base64/)
        }
        assert.equal(receiver.received.length, 0)

        const other = await partnerWithReceiver((_partner, callback) => ({
          afterAnswer: (push) => void callback(push.event.audioId),
        }))
        const otherAudioId = await ingest(platform, other.partner.enterpriseId, recording())
        await eventually(() => inState(otherAudioId, 'confirmed'), 10_000, 'another enterprise still pushed')
        assert.deepEqual(unhandled, [])
      } finally {
        process.off('unhandledRejection', onUnhandled)
      }
    })
  })
}

describe('push URL safety when private addresses are not allowed', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startTestPlatform('pglite', { pushAllowPrivate: false })
  })
  after(() => platform.stop())

  for (const pushUrl of [
    'http://127.0.0.1:9/push',
    'http://localhost/push',
    'http://169.254.169.254/latest',
    'http://10.1.2.3/x',
  ]) {
    test(`${pushUrl} is refused with 4001 naming pushUrl`, async () => {
      const refusal = await adminRefusal(platform, 'createEnterprise', { body: { name: 'Risky', pushUrl } })
      assert.equal(refusal.status, 400)
      assert.equal(refusal.code, 4001)
      assert.match(refusal.msg, /^pushUrl: /)
    })
  }

  test('the address connected to is checked again: a name that now resolves to loopback is not pushed to', async () => {
    const partner = await createPartner(platform)
    const receiver = await startTestReceiver(partner.secret)
    try {
      // As if the name resolved to a public address when the URL was set (DNS rebinding).
      await platform.context.db.query(
        'INSERT INTO endpoints (enterprise_id, url, event_types) VALUES ($1, $2, $3)',
        [partner.enterpriseId, receiver.url.replace('127.0.0.1', 'localhost'), ['recording.audio_ready']],
      )
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const attempt = await eventually(
        async () => (await listDeliveries(platform.context.db, { audioId, limit: 1 }))[0]?.attempts[0],
        10_000,
        'a first attempt',
      )
      assert.equal(attempt.outcome, 'failed')
      assert.match(attempt.error ?? '', /push address (127\.0\.0\.1|::1) refused: a loopback address/)
      assert.equal(receiver.received.length, 0)
    } finally {
      await receiver.close()
    }
  })
})
