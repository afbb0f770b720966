import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, adminReply, createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { importRecordings, recordingBatch } from '@earshot/test-kit/fault-kit'
import { callbackSender, startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import type { NewEndpoint } from '../admin-client/admin-client.js'
import type { PlatformConfig } from '../config/config.js'

/**
 * Each recording's events reach each endpoint in the order they were created, under failures and delays,
 * and nothing is lost; an endpoint's rate holds without holding back another endpoint.
 */

const settings: Partial<PlatformConfig> = {
  // Enough retries that no delivery runs out of them at the receivers' failure rate (0.25^21).
  pushRetryScheduleSeconds: Array.from({ length: 20 }, () => 0.05),
  // Long enough that no acknowledged delivery is pushed again: a re-push may overtake later events.
  pushConfirmWindowSeconds: 120,
  pushTimeoutSeconds: 2,
  // Two receivers calling back after every acknowledgement: thousands of callbacks a minute.
  rateLimitPerMinute: 0,
}

/** The 2,000 on PostgreSQL; fewer on the embedded database, which runs one statement at a time. */
const RECORDINGS = { pglite: 400, postgres: 2000 } as const

/** A small seeded generator (mulberry32): the same failures and delays on every run. */
function seeded(seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Arrival {
  eventId: string
  audioId: string
  acked: boolean
}

for (const backend of testBackends) {
  describe(`${backend}: push order and rate`, { timeout: 600_000 }, () => {
    let platform: TestPlatform
    const receivers: TestReceiver[] = []
    // Receipt callbacks retry until answered: each test waits for its own before it ends.
    const callbacks: Promise<void>[] = []
    before(async () => {
      platform = await startTestPlatform(backend, settings)
    })
    after(async () => {
      for (const receiver of receivers) await receiver.close()
      await platform?.stop()
    })

    /** A receiver that fails a quarter of pushes and answers a fifth late, calling back after each 2000. */
    async function flakyReceiver(partner: TestPartner, seed: number, arrivals: Arrival[]) {
      const random = seeded(seed)
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const receiver = await startTestReceiver(partner.secret, {
        async answer(push) {
          const roll = random()
          const acked = roll >= 0.25
          arrivals.push({ eventId: push.event.eventId, audioId: push.event.audioId, acked })
          if (roll >= 0.25 && roll < 0.45) await delay(Math.floor(random() * 150))
          return acked ? { status: 200, body: { code: 2000 } } : { status: 500, body: { code: 5000 } }
        },
        // As the kit does: a receipt for each recording stored, none for a deletion.
        afterAnswer: (push, answer) => {
          const stored = push.event.eventType !== PushEventType.DELETED
          if (stored && (answer.body as { code?: number }).code === 2000)
            callbacks.push(callback(push.event.audioId))
        },
      })
      receivers.push(receiver)
      return receiver
    }

    async function addEndpoint(enterpriseId: number, body: NewEndpoint): Promise<number> {
      const added = await adminReply(platform, 'addEndpoint', { params: { enterpriseId }, body })
      assert.equal(added.status, 201, JSON.stringify(added.body))
      return added.body.endpointId
    }

    /** Transcripts for all, updates for half, deletions for a quarter, a few at a time while pushes flow. */
    async function changeRecordings(enterpriseId: number, audioIds: readonly string[]) {
      const change = async (audioId: string, i: number) => {
        const params = { enterpriseId, audioId }
        const transcript = {
          transcriptId: i + 1,
          transcriptText: `words ${i}`,
          sentences: [{ text: `words ${i}`, beginTime: 0, endTime: 500 }],
          durationMs: 500,
          wordsCount: 2,
        }
        await adminCall(platform, 'attachTranscript', { params, body: transcript })
        if (i % 2 === 0) await adminCall(platform, 'updateRecording', { params, body: { title: `t${i}` } })
        if (i % 4 === 0) await adminCall(platform, 'deleteRecording', { params })
      }
      let next = 0
      const worker = async () => {
        for (let i = next++; i < audioIds.length; i = next++) await change(audioIds[i] as string, i)
      }
      await Promise.all(Array.from({ length: 8 }, worker))
    }

    async function settledDeliveries(enterpriseId: number) {
      const open = async () => {
        const [row] = await platform.context.db.query<{ open: number }>(
          `SELECT count(*)::int AS open FROM deliveries
            WHERE enterprise_id = $1 AND state IN ('pending', 'held', 'queued', 'in_flight', 'acked')`,
          [enterpriseId],
        )
        return row?.open === 0
      }
      await eventually(open, 300_000, 'every delivery settled')
      return platform.context.db.query<{
        delivery_id: number
        endpoint_id: number
        event_id: string
        audio_id: string
        event_type: string
        state: string
      }>(
        `SELECT delivery_id::int, endpoint_id::int, event_id, audio_id, event_type, state FROM deliveries
          WHERE enterprise_id = $1 ORDER BY delivery_id`,
        [enterpriseId],
      )
    }

    test("under failures and delays, no endpoint receives a recording's events out of creation order, and nothing is lost", async () => {
      const partner = await createPartner(platform)
      const arrivals = new Map<number, Arrival[]>()
      for (const seed of [1, 2]) {
        const seen: Arrival[] = []
        const receiver = await flakyReceiver(partner, seed, seen)
        arrivals.set(await addEndpoint(partner.enterpriseId, { url: receiver.url }), seen)
      }
      const batch = recordingBatch(`order-${backend}`, RECORDINGS[backend])
      const imported = importRecordings(platform, partner.enterpriseId, batch)
      await imported
      await changeRecordings(partner.enterpriseId, batch.audioIds)
      const deliveries = await settledDeliveries(partner.enterpriseId)

      const deleted = new Set(batch.audioIds.filter((_, i) => i % 4 === 0))
      const byEvent = new Map(deliveries.map((d) => [d.event_id, d]))
      for (const d of deliveries) {
        const expected =
          d.state === 'confirmed' ||
          (d.state === 'cancelled' && deleted.has(d.audio_id) && d.event_type !== PushEventType.DELETED)
        assert.ok(expected, `delivery ${d.delivery_id} (${d.event_type} of ${d.audio_id}) ended ${d.state}`)
      }
      for (const [endpointId, seen] of arrivals) {
        const lastOf = new Map<string, number>()
        for (const arrival of seen) {
          const delivery = byEvent.get(arrival.eventId)
          assert.ok(delivery && delivery.endpoint_id === endpointId, 'every push is one of the endpoint')
          const last = lastOf.get(arrival.audioId) ?? 0
          assert.ok(
            delivery.delivery_id >= last,
            `endpoint ${endpointId} got ${delivery.event_type} of ${arrival.audioId} after a later event`,
          )
          lastOf.set(arrival.audioId, delivery.delivery_id)
        }
        const acked = new Set(seen.filter((arrival) => arrival.acked).map((arrival) => arrival.eventId))
        const confirmed = deliveries.filter((d) => d.endpoint_id === endpointId && d.state === 'confirmed')
        assert.ok(
          confirmed.every((d) => acked.has(d.event_id)),
          'every confirmed delivery was received',
        )
        const deletions = confirmed.filter((d) => d.event_type === PushEventType.DELETED)
        assert.equal(deletions.length, deleted.size, 'every deletion reached every endpoint')
      }
      assert.ok(deliveries.length >= RECORDINGS[backend] * 2 * 2.5)
      await Promise.all(callbacks)
    })

    test("an endpoint's rate holds its deliveries to it, and another endpoint's go meanwhile", async () => {
      const partner = await createPartner(platform)
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const calledBack = {
        afterAnswer: (push: { event: { audioId: string } }) => void callback(push.event.audioId),
      }
      const limited = await startTestReceiver(partner.secret, calledBack)
      const free = await startTestReceiver(partner.secret, calledBack)
      receivers.push(limited, free)
      await addEndpoint(partner.enterpriseId, { url: limited.url, maxPerSecond: 2 })
      await addEndpoint(partner.enterpriseId, { url: free.url })
      const batch = recordingBatch(`rate-${backend}`, 10)
      await importRecordings(platform, partner.enterpriseId, batch)

      await eventually(async () => free.received.length === 10, 30_000, 'the unlimited endpoint has them all')
      await eventually(
        async () => limited.received.length === 10,
        30_000,
        'the limited endpoint has them all',
      )
      const starts = limited.received.map((push) => push.at)
      // Each claim moves the endpoint's next start on by 1/2 s: the tenth starts at least 4.5 s after the
      // first (less the first's own delay after its claim).
      assert.ok((starts[9] as number) - (starts[0] as number) >= 4_000, `${starts.join(', ')}`)
      const lastFree = free.received.at(-1)?.at as number
      assert.ok(lastFree < (starts[9] as number), 'the unlimited endpoint did not wait for the limited one')
      await Promise.all(callbacks)
    })
  })
}
