import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  admin,
  adminCall,
  adminRefusal,
  adminReply,
  createPartner,
  ingest,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import {
  callbackSender,
  type ReceiverBehaviour,
  startTestReceiver,
  type TestReceiver,
} from '@earshot/test-kit/test-receiver'
import type { NewEndpoint } from '../admin-client/admin-client.js'
import type { PlatformConfig } from '../config/config.js'
import { type DeliveryState, deliveryQueue } from '../deliveries/delivery-store.js'

/** Push endpoints: several per enterprise, subscriptions, hold and removal, the shorthand, refusals. */

const settings: Partial<PlatformConfig> = {
  pushRetryScheduleSeconds: Array.from({ length: 20 }, () => 0.1),
  pushConfirmWindowSeconds: 30,
  pushTimeoutSeconds: 2,
}

const transcript = {
  transcriptId: 1,
  transcriptText: 'hello there',
  sentences: [{ text: 'hello there', beginTime: 0, endTime: 900 }],
  durationMs: 900,
  wordsCount: 2,
}

let counter = 0
const recording = (withTranscript = false) => ({
  deviceUid: 'DEV-ENDPOINTS',
  title: `endpoints ${++counter}`,
  recordedAt: '2026-03-01T10:00:00+08:00',
  denoiseUrl: `https://media.example/endpoints-${counter}.mp3`,
  recordDuration: 1000,
  ...(withTranscript && { transcript }),
})

const { AUDIO_READY, TRANSCRIPT_READY, UPDATED } = PushEventType

/** A refusal of the admin API: its code, the HTTP status the catalogue gives it, and a message. */
function refused(reply: { status: number; code: unknown; msg: unknown }, code: number, msg?: RegExp) {
  assert.equal(reply.code, code, JSON.stringify(reply))
  assert.equal(reply.status, Math.floor(code / 10))
  if (msg) assert.match(String(reply.msg), msg)
}
const FAIL = { status: 500, body: { code: 5000 } }

for (const backend of testBackends) {
  describe(`${backend}: push endpoints`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    const receivers: TestReceiver[] = []
    before(async () => {
      platform = await startTestPlatform(backend, settings)
    })
    after(async () => {
      for (const receiver of receivers) await receiver.close()
      await platform?.stop()
    })

    /** A receiver of the partner's that calls back after every 2000, as the kit does. */
    async function receiverOf(partner: TestPartner, behaviour: ReceiverBehaviour = {}) {
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const receiver = await startTestReceiver(partner.secret, {
        afterAnswer: (push, answer) => {
          if ((answer.body as { code?: number }).code === 2000) void callback(push.event.audioId)
        },
        ...behaviour,
      })
      receivers.push(receiver)
      return receiver
    }

    async function addEndpoint(enterpriseId: number, body: NewEndpoint) {
      const added = await adminReply(platform, 'addEndpoint', { params: { enterpriseId }, body })
      assert.equal(added.status, 201, JSON.stringify(added.body))
      return added.body
    }

    async function endpointsOf(enterpriseId: number) {
      return (await adminCall(platform, 'listEnterpriseEndpoints', { params: { enterpriseId } })).endpoints
    }

    /** The refusal of a body no contract allows, sent as it is. */
    async function offContract(method: string, path: string, body: object) {
      const { status, body: answer } = await admin(platform, method, path, body)
      return { status, ...answer } as { status: number; code: unknown; msg: unknown }
    }

    async function deliveryStates(audioId: string) {
      return platform.context.db.query<{ endpoint_id: number; event_type: string; state: DeliveryState }>(
        'SELECT endpoint_id::int, event_type, state FROM deliveries WHERE audio_id = $1 ORDER BY delivery_id',
        [audioId],
      )
    }
    const allIn = async (audioId: string, states: DeliveryState[], count: number) => {
      const rows = await deliveryStates(audioId)
      return rows.length === count && rows.every((row) => states.includes(row.state)) && rows
    }

    test('two endpoints, one for transcripts only: each gets exactly its types, in order; an update is pushed; one receipt confirms both', async () => {
      const partner = await createPartner(platform)
      const all = await receiverOf(partner)
      const transcripts = await receiverOf(partner)
      const everything = await addEndpoint(partner.enterpriseId, { url: all.url, description: 'archive' })
      const onlyTranscripts = await addEndpoint(partner.enterpriseId, {
        url: transcripts.url,
        eventTypes: [TRANSCRIPT_READY],
      })
      assert.deepEqual(everything.eventTypes, Object.values(PushEventType))
      assert.equal(everything.description, 'archive')
      assert.deepEqual(onlyTranscripts.eventTypes, [TRANSCRIPT_READY])

      const audioId = await ingest(platform, partner.enterpriseId, recording(true))
      await adminCall(platform, 'updateRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId },
        body: { title: 'renamed' },
      })
      const rows = await eventually(
        () => allIn(audioId, ['confirmed'], 4),
        15_000,
        'every delivery confirmed',
      )

      assert.deepEqual(
        rows.map((row) => [row.endpoint_id, row.event_type]),
        [
          [everything.endpointId, AUDIO_READY],
          [everything.endpointId, TRANSCRIPT_READY],
          [onlyTranscripts.endpointId, TRANSCRIPT_READY],
          [everything.endpointId, UPDATED],
        ],
      )
      const firsts = (receiver: TestReceiver) => [
        ...new Set(receiver.received.map((push) => push.event.eventType)),
      ]
      assert.deepEqual(firsts(all), [AUDIO_READY, TRANSCRIPT_READY, UPDATED])
      assert.deepEqual(firsts(transcripts), [TRANSCRIPT_READY])
      const update = all.received.find((push) => push.event.eventType === UPDATED)
      assert.ok(update, 'the update was pushed')
      assert.equal((update.event as { data?: { title?: string } }).data?.title, 'renamed')
    })

    test('an update that changes nothing partners see pushes nothing', async () => {
      const partner = await createPartner(platform)
      const receiver = await receiverOf(partner)
      await addEndpoint(partner.enterpriseId, { url: receiver.url })
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      await adminCall(platform, 'updateRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId },
        body: { title: `endpoints ${counter}` },
      })
      assert.deepEqual(
        (await deliveryStates(audioId)).map((row) => row.event_type),
        [AUDIO_READY],
      )
    })

    test("disabled, an endpoint holds its deliveries and new events'; enabled, they go; removed, what is open is cancelled", async () => {
      const partner = await createPartner(platform)
      let answering = false
      const receiver = await receiverOf(partner, {
        answer: () => (answering ? { status: 200, body: { code: 2000 } } : FAIL),
      })
      const endpoint = await addEndpoint(partner.enterpriseId, { url: receiver.url })
      const params = { enterpriseId: partner.enterpriseId, endpointId: endpoint.endpointId }
      const first = await ingest(platform, partner.enterpriseId, recording())
      await eventually(async () => receiver.received.length > 0, 10_000, 'a first attempt')

      const disabled = await adminCall(platform, 'updateEndpoint', { params, body: { enabled: false } })
      assert.equal(disabled.enabled, false)
      await eventually(() => allIn(first, ['held'], 1), 10_000, 'held')
      const paused = await ingest(platform, partner.enterpriseId, recording())
      assert.deepEqual(
        (await deliveryStates(paused)).map((row) => row.state),
        ['held'],
      )

      answering = true
      const enabled = await adminCall(platform, 'updateEndpoint', { params, body: { enabled: true } })
      assert.equal(enabled.enabled, true)
      await eventually(() => allIn(first, ['confirmed'], 1), 10_000, 'confirmed once enabled')
      await eventually(() => allIn(paused, ['confirmed'], 1), 10_000, 'made while disabled: confirmed too')

      answering = false
      const open = await ingest(platform, partner.enterpriseId, recording(true))
      await eventually(() => allIn(open, ['pending', 'in_flight', 'queued'], 2), 10_000, 'open')
      const removed = await adminCall(platform, 'removeEndpoint', { params })
      assert.deepEqual(removed, { removed: endpoint.endpointId, cancelled: 2 })
      await eventually(() => allIn(open, ['cancelled'], 2), 10_000, 'cancelled')
      assert.deepEqual(await endpointsOf(partner.enterpriseId), [])
      refused(await adminRefusal(platform, 'removeEndpoint', { params }), 4040, /has no endpoint/)
    })

    test('a rate changed wakes the push dispatchers, whose next attempt time it may have moved', async () => {
      const partner = await createPartner(platform)
      const endpoint = await addEndpoint(partner.enterpriseId, {
        url: 'http://127.0.0.1:9/',
        maxPerSecond: 1,
      })
      const params = { enterpriseId: partner.enterpriseId, endpointId: endpoint.endpointId }
      let woken = 0
      const stop = await platform.context.db.listen(deliveryQueue.spec.channel, () => {
        woken++
      })
      try {
        const lifted = await adminCall(platform, 'updateEndpoint', { params, body: { maxPerSecond: null } })
        assert.equal(lifted.maxPerSecond, null)
        await eventually(async () => woken > 0, 10_000, 'a wake-up on the push channel')
      } finally {
        await stop()
      }
    })

    test('set-push-url leaves the enterprise one endpoint for every event type', async () => {
      const partner = await createPartner(platform)
      const receiver = await receiverOf(partner)
      const kept = await addEndpoint(partner.enterpriseId, { url: receiver.url, eventTypes: [UPDATED] })
      await addEndpoint(partner.enterpriseId, { url: `${receiver.url}?second`, maxPerSecond: 5 })
      const params = { enterpriseId: partner.enterpriseId }
      await adminCall(platform, 'setPushUrl', { params, body: { pushUrl: `${receiver.url}?only` } })
      const listed = await endpointsOf(partner.enterpriseId)
      assert.deepEqual(
        listed.map((each) => [each.endpointId, each.url, each.eventTypes, each.maxPerSecond]),
        [[kept.endpointId, `${receiver.url}?only`, Object.values(PushEventType), null]],
      )
      await adminCall(platform, 'setPushUrl', { params, body: { pushUrl: null } })
      assert.deepEqual(await endpointsOf(partner.enterpriseId), [])
    })

    test('refusals: the eleventh endpoint, a bad field, an unknown or foreign endpoint', async () => {
      const partner = await createPartner(platform)
      const other = await createPartner(platform)
      const added = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          addEndpoint(partner.enterpriseId, { url: `http://127.0.0.1:9/${i}` }),
        ),
      )
      const own = { enterpriseId: partner.enterpriseId }
      refused(
        await adminRefusal(platform, 'addEndpoint', { params: own, body: { url: 'http://127.0.0.1:9/11' } }),
        4001,
        /has 10 endpoints, the most it may have/,
      )

      const others = { enterpriseId: other.enterpriseId }
      const eventTypes = ['recording.played']
      refused(
        await offContract('POST', `/enterprises/${other.enterpriseId}/endpoints`, {
          url: 'http://127.0.0.1:9/',
          eventTypes,
        }),
        4001,
        /^eventTypes/,
      )
      refused(
        await adminRefusal(platform, 'addEndpoint', { params: others, body: { url: 'ftp://x.example/' } }),
        4001,
        /^url: /,
      )
      const endpointId = added[0]?.endpointId as number
      const first = { ...own, endpointId }
      refused(
        await adminRefusal(platform, 'updateEndpoint', { params: first, body: { maxPerSecond: 0 } }),
        4001,
        /^maxPerSecond/,
      )
      const firstPath = `/enterprises/${partner.enterpriseId}/endpoints/${endpointId}`
      refused(await offContract('PATCH', firstPath, { colour: 'red' }), 4001, /colour/)
      refused(await adminRefusal(platform, 'showEndpoint', { params: { ...others, endpointId } }), 4040)
      const unknown = { enterpriseId: 999_999 }
      refused(await adminRefusal(platform, 'listEnterpriseEndpoints', { params: unknown }), 4040)
      refused(
        await adminRefusal(platform, 'addEndpoint', {
          params: unknown,
          body: { url: 'http://127.0.0.1:9/' },
        }),
        4040,
      )
    })
  })
}
