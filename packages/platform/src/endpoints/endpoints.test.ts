import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import {
  callbackSender,
  type ReceiverBehaviour,
  startTestReceiver,
  type TestReceiver,
} from '@earshot/test-kit/test-receiver'
import type { PlatformConfig } from '../config/config.js'
import type { DeliveryState } from '../deliveries/delivery-store.js'
import type { EndpointView } from './endpoint-store.js'

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
function refused(reply: { status: number; body: Record<string, unknown> }, code: number, msg?: RegExp) {
  assert.equal(reply.body.code, code, JSON.stringify(reply.body))
  assert.equal(reply.status, Math.floor(code / 10))
  if (msg) assert.match(String(reply.body.msg), msg)
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

    const endpointsPath = (enterpriseId: number) => `/enterprises/${enterpriseId}/endpoints`

    async function addEndpoint(enterpriseId: number, body: Record<string, unknown>): Promise<EndpointView> {
      const added = await admin<EndpointView>(platform, 'POST', endpointsPath(enterpriseId), body)
      assert.equal(added.status, 201, JSON.stringify(added.body))
      return added.body
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
      const updated = await admin(
        platform,
        'PATCH',
        `/enterprises/${partner.enterpriseId}/recordings/${audioId}`,
        {
          title: 'renamed',
        },
      )
      assert.equal(updated.status, 200, JSON.stringify(updated.body))
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
      const same = await admin(
        platform,
        'PATCH',
        `/enterprises/${partner.enterpriseId}/recordings/${audioId}`,
        {
          title: `endpoints ${counter}`,
        },
      )
      assert.equal(same.status, 200)
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
      const path = `${endpointsPath(partner.enterpriseId)}/${endpoint.endpointId}`
      const first = await ingest(platform, partner.enterpriseId, recording())
      await eventually(async () => receiver.received.length > 0, 10_000, 'a first attempt')

      const disabled = await admin<EndpointView>(platform, 'PATCH', path, { enabled: false })
      assert.equal(disabled.body.enabled, false)
      await eventually(() => allIn(first, ['held'], 1), 10_000, 'held')
      const paused = await ingest(platform, partner.enterpriseId, recording())
      assert.deepEqual(
        (await deliveryStates(paused)).map((row) => row.state),
        ['held'],
      )

      answering = true
      const enabled = await admin<EndpointView>(platform, 'PATCH', path, { enabled: true })
      assert.equal(enabled.body.enabled, true)
      await eventually(() => allIn(first, ['confirmed'], 1), 10_000, 'confirmed once enabled')
      await eventually(() => allIn(paused, ['confirmed'], 1), 10_000, 'made while disabled: confirmed too')

      answering = false
      const open = await ingest(platform, partner.enterpriseId, recording(true))
      await eventually(() => allIn(open, ['pending', 'in_flight', 'queued'], 2), 10_000, 'open')
      const removed = await admin<{ removed: number; cancelled: number }>(platform, 'DELETE', path)
      assert.deepEqual(removed.body, { removed: endpoint.endpointId, cancelled: 2 })
      await eventually(() => allIn(open, ['cancelled'], 2), 10_000, 'cancelled')
      const listed = await admin<{ endpoints: EndpointView[] }>(
        platform,
        'GET',
        endpointsPath(partner.enterpriseId),
      )
      assert.deepEqual(listed.body.endpoints, [])
      refused(await admin(platform, 'DELETE', path), 4040, /has no endpoint/)
    })

    test('set-push-url leaves the enterprise one endpoint for every event type', async () => {
      const partner = await createPartner(platform)
      const receiver = await receiverOf(partner)
      const kept = await addEndpoint(partner.enterpriseId, { url: receiver.url, eventTypes: [UPDATED] })
      await addEndpoint(partner.enterpriseId, { url: `${receiver.url}?second`, maxPerSecond: 5 })
      const set = await admin(platform, 'PUT', `/enterprises/${partner.enterpriseId}/push-url`, {
        pushUrl: `${receiver.url}?only`,
      })
      assert.equal(set.status, 200, JSON.stringify(set.body))
      const listed = await admin<{ endpoints: EndpointView[] }>(
        platform,
        'GET',
        endpointsPath(partner.enterpriseId),
      )
      assert.deepEqual(
        listed.body.endpoints.map((each) => [each.endpointId, each.url, each.eventTypes, each.maxPerSecond]),
        [[kept.endpointId, `${receiver.url}?only`, Object.values(PushEventType), null]],
      )
      const cleared = await admin(platform, 'PUT', `/enterprises/${partner.enterpriseId}/push-url`, {
        pushUrl: null,
      })
      assert.equal(cleared.status, 200)
      const none = await admin<{ endpoints: EndpointView[] }>(
        platform,
        'GET',
        endpointsPath(partner.enterpriseId),
      )
      assert.deepEqual(none.body.endpoints, [])
    })

    test('refusals: the eleventh endpoint, a bad field, an unknown or foreign endpoint', async () => {
      const partner = await createPartner(platform)
      const other = await createPartner(platform)
      const path = endpointsPath(partner.enterpriseId)
      const added = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          addEndpoint(partner.enterpriseId, { url: `http://127.0.0.1:9/${i}` }),
        ),
      )
      refused(
        await admin(platform, 'POST', path, { url: 'http://127.0.0.1:9/11' }),
        4001,
        /has 10 endpoints, the most it may have/,
      )

      const otherPath = endpointsPath(other.enterpriseId)
      const eventTypes = ['recording.played']
      refused(
        await admin(platform, 'POST', otherPath, { url: 'http://127.0.0.1:9/', eventTypes }),
        4001,
        /^eventTypes/,
      )
      refused(await admin(platform, 'POST', otherPath, { url: 'ftp://x.example/' }), 4001, /^url: /)
      const first = `${path}/${added[0]?.endpointId}`
      refused(await admin(platform, 'PATCH', first, { maxPerSecond: 0 }), 4001, /^maxPerSecond/)
      refused(await admin(platform, 'PATCH', first, { colour: 'red' }), 4001, /colour/)
      refused(await admin(platform, 'GET', `${otherPath}/${added[0]?.endpointId}`), 4040)
      refused(await admin(platform, 'GET', endpointsPath(999_999)), 4040)
      refused(await admin(platform, 'POST', endpointsPath(999_999), { url: 'http://127.0.0.1:9/' }), 4040)
    })
  })
}
