import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { seal } from '@earshot/protocol'
import type { Claim } from '@earshot/support/queue'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  ingest,
  postJson,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { type ClaimedDelivery, deliveryQueue } from '../deliveries/delivery-store.js'
import { getDelivery, listDeliveries } from '../deliveries/delivery-views.js'

/** POST /openapi/v1/callback, and tenant isolation of the callback and the query. */

const CALLBACK = '/openapi/v1/callback'
const AUDIOS = '/openapi/v1/audios'

function recording(audioId: string, deviceUid: string, recordedAt: string) {
  return {
    audioId,
    deviceUid,
    title: `title of ${audioId}`,
    recordedAt,
    denoiseUrl: `https://cdn.example/${audioId}.mp3`,
    recordDuration: 1000,
  }
}

let counter = 0

for (const backend of testBackends) {
  describe(`POST /openapi/v1/callback (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let a: TestPartner
    let b: TestPartner
    let tokenA: string
    let tokenB: string

    async function receipts(audioId?: string): Promise<{ audio_id: string; enterprise_id: number }[]> {
      return platform.context.db.query(
        `SELECT audio_id, enterprise_id FROM receipts ${audioId ? 'WHERE audio_id = $1' : ''} ORDER BY audio_id`,
        audioId ? [audioId] : [],
      )
    }

    before(async () => {
      platform = await startTestPlatform(backend)
      a = await createPartner(platform, 'Alpha')
      b = await createPartner(platform, 'Beta')
      // Both enterprises use the same device UID and the same instants.
      await ingest(platform, a.enterpriseId, recording('cb-a1', 'shared-dev', '2026-04-01T08:00:00Z'))
      await ingest(platform, a.enterpriseId, recording('cb-a2', 'shared-dev', '2026-04-02T08:00:00Z'))
      await ingest(platform, b.enterpriseId, recording('cb-b1', 'shared-dev', '2026-04-01T08:00:00Z'))
      await ingest(platform, b.enterpriseId, recording('cb-b2', 'b-only-dev', '2026-04-03T08:00:00Z'))
      tokenA = await a.token()
      tokenB = await b.token()
    })
    after(async () => {
      await platform?.stop()
    })

    test('2000 for a recording of the caller, with one receipt row', async () => {
      const reply = await a.call(CALLBACK, { audioId: 'cb-a1' }, tokenA)
      expectCode(reply, 2000)
      assert.equal(reply.body.msg, 'success')
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'msg', 'requestId'])
      assert.deepEqual(await receipts('cb-a1'), [{ audio_id: 'cb-a1', enterprise_id: a.enterpriseId }])
    })

    test('a repeated callback still answers 2000 and adds nothing', async () => {
      const [before] = await platform.context.db.query<{ confirmed_at: Date | string }>(
        'SELECT confirmed_at FROM receipts WHERE audio_id = $1',
        ['cb-a1'],
      )
      for (let i = 0; i < 3; i++) expectCode(await a.call(CALLBACK, { audioId: 'cb-a1' }, tokenA), 2000)
      // With another token of the same enterprise too.
      expectCode(await a.call(CALLBACK, { audioId: 'cb-a1' }), 2000)
      const rows = await platform.context.db.query<{ confirmed_at: Date | string }>(
        'SELECT confirmed_at FROM receipts WHERE audio_id = $1',
        ['cb-a1'],
      )
      assert.equal(rows.length, 1)
      assert.deepEqual(rows[0]?.confirmed_at, before?.confirmed_at)
      assert.equal((await receipts()).length, 1)
    })

    test('a missing or invalid audioId is refused with 4001 naming audioId', async () => {
      for (const plaintext of [
        {},
        { audioId: '' },
        { audioId: 42 },
        { audioId: null },
        { audioId: 'x'.repeat(129) },
        { audioId: 'cb-a2\u0000' },
      ]) {
        const reply = await a.call(CALLBACK, plaintext, tokenA)
        expectCode(reply, 4001)
        assert.match(reply.body.msg as string, /audioId/, JSON.stringify(plaintext))
      }
      const extra = await a.call(CALLBACK, { audioId: 'cb-a2', eventId: 'e1' }, tokenA)
      expectCode(extra, 4001)
      assert.match(extra.body.msg as string, /eventId/)
      assert.equal((await receipts('cb-a2')).length, 0)
    })

    test('an unknown audioId is refused with 4040', async () => {
      const reply = await a.call(CALLBACK, { audioId: 'cb-nowhere' }, tokenA)
      expectCode(reply, 4040)
      assert.match(reply.body.msg as string, /cb-nowhere/)
      assert.equal((await receipts()).length, 1)
    })

    test("an enterprise cannot confirm another's recording: 4040 shaped like an unknown id", async () => {
      const foreign = await a.call(CALLBACK, { audioId: 'cb-b1' }, tokenA)
      const unknown = await a.call(CALLBACK, { audioId: 'cb-zz' }, tokenA)
      expectCode(foreign, 4040)
      expectCode(unknown, 4040)
      assert.equal(
        (foreign.body.msg as string).replace('cb-b1', '<id>'),
        (unknown.body.msg as string).replace('cb-zz', '<id>'),
      )
      assert.equal((await receipts('cb-b1')).length, 0)
      // The owner can.
      expectCode(await b.call(CALLBACK, { audioId: 'cb-b1' }, tokenB), 2000)
      assert.deepEqual(await receipts('cb-b1'), [{ audio_id: 'cb-b1', enterprise_id: b.enterpriseId }])
      // And A confirming it afterwards is still refused, leaving B's receipt alone.
      expectCode(await a.call(CALLBACK, { audioId: 'cb-b1' }, tokenA), 4040)
      assert.deepEqual(await receipts('cb-b1'), [{ audio_id: 'cb-b1', enterprise_id: b.enterpriseId }])
    })

    test("an enterprise cannot read another's recordings through any filter", async () => {
      const query = async (filter: Record<string, unknown>) => {
        const reply = await a.call(AUDIOS, filter, tokenA)
        expectCode(reply, 2000)
        return reply.plaintext as { total: number; items: { audioId: string }[] }
      }
      const byId = await query({ audioId: 'cb-b1' })
      assert.equal(byId.total, 0)
      assert.deepEqual(byId.items, [])
      assert.equal((await query({ audioId: 'cb-b2' })).total, 0)
      assert.equal((await query({ deviceUid: 'b-only-dev' })).total, 0)
      const shared = await query({ deviceUid: 'shared-dev' })
      assert.equal(shared.total, 2)
      assert.deepEqual(
        shared.items.map((item) => item.audioId),
        ['cb-a2', 'cb-a1'],
      )
      const sameInstant = await query({ startTime: '2026-04-01T08:00:00Z', endTime: '2026-04-01T08:00:01Z' })
      assert.deepEqual(
        sameInstant.items.map((item) => item.audioId),
        ['cb-a1'],
      )
      const everything = await query({ size: 100 })
      assert.equal(everything.total, 2)
      // B sees only its own.
      const seenByB = await b.call(AUDIOS, { size: 100 }, tokenB)
      expectCode(seenByB, 2000)
      assert.deepEqual(
        (seenByB.plaintext as { items: { audioId: string }[] }).items.map((item) => item.audioId),
        ['cb-b2', 'cb-b1'],
      )
    })

    test("A's token with an envelope under B's key is refused with 4012", async () => {
      const underB = (plaintext: Record<string, unknown>) =>
        seal(b.key, b.keyVersion, `cb-cross-${++counter}`, plaintext)
      expectCode(await postJson(platform, AUDIOS, underB({}), tokenA), 4012)
      expectCode(await postJson(platform, CALLBACK, underB({ audioId: 'cb-b2' }), tokenA), 4012)
      expectCode(await postJson(platform, CALLBACK, underB({ audioId: 'cb-a2' }), tokenA), 4012)
      // B's enterpriseId beside the envelope does not make it B's request either.
      const claimed = { ...underB({ audioId: 'cb-b2' }), enterpriseId: b.enterpriseId }
      expectCode(await postJson(platform, CALLBACK, claimed, tokenA), 4012)
      assert.equal((await receipts('cb-b2')).length, 0)
      assert.equal((await receipts('cb-a2')).length, 0)
    })
  })
}

/**
 * Which deliveries a callback confirms: those the partner acknowledged. The
 * dispatcher is off; each test claims and settles its delivery through the delivery queue itself.
 */
for (const backend of testBackends) {
  describe(`receipt callback and the deliveries of its recording (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let counter = 0
    const ack = { outcome: 'acked', durationMs: 5, columns: { http_status: 200, response_code: 2000 } }
    const window = { state: 'acked', delaySeconds: 600 } as const

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      partner = await createPartner(platform, 'Receipts')
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: 'http://127.0.0.1:9/push' },
      })
    })
    after(async () => {
      await platform?.stop()
    })

    /** A new recording with its one pending delivery. */
    async function pendingDelivery(): Promise<{ audioId: string; deliveryId: number }> {
      const audioId = await ingest(
        platform,
        partner.enterpriseId,
        recording(`rr-${backend}-${++counter}`, 'dev', '2026-04-01T08:00:00Z'),
      )
      const [delivery] = await listDeliveries(platform.context.db, { audioId, limit: 10 })
      assert.equal(delivery?.state, 'pending')
      return { audioId, deliveryId: delivery.deliveryId }
    }

    /** Claims this delivery (as a dispatcher would), handing back any other that was due. */
    async function claim(deliveryId: number): Promise<Claim<number, ClaimedDelivery>> {
      const { db } = platform.context
      const claims = await deliveryQueue.claim(db, { claimant: 'test', limit: 1000, leaseSeconds: 60 })
      await deliveryQueue.release(
        db,
        claims.filter((c) => c.id !== deliveryId),
      )
      const mine = claims.find((c) => c.id === deliveryId)
      assert.ok(mine, `delivery ${deliveryId} claimed`)
      return mine
    }

    const callback = async (audioId: string) => expectCode(await partner.call(CALLBACK, { audioId }), 2000)
    const delivery = async (deliveryId: number) => {
      const found = await getDelivery(platform.context.db, deliveryId)
      assert.ok(found)
      return found
    }

    test('a delivery never pushed stays pending: the callback does not confirm it', async () => {
      const { audioId, deliveryId } = await pendingDelivery()
      await callback(audioId)
      const after = await delivery(deliveryId)
      assert.equal(after.state, 'pending')
      assert.equal(after.confirmedAt, null)
      assert.ok(after.nextAttemptAt, 'still due to be pushed')
    })

    test('a delivery whose push failed stays as it is: pending for its retry, or failed', async () => {
      const { audioId, deliveryId } = await pendingDelivery()
      const first = await claim(deliveryId)
      const failure = { startedAt: Date.now(), durationMs: 3, error: 'HTTP 503' }
      assert.ok(
        await deliveryQueue.fail(platform.context.db, first, { state: 'pending', delaySeconds: 0 }, failure),
      )
      await callback(audioId)
      assert.equal((await delivery(deliveryId)).state, 'pending')
      const second = await claim(deliveryId)
      assert.ok(await deliveryQueue.fail(platform.context.db, second, { state: 'failed' }, failure))
      await callback(audioId)
      assert.equal((await delivery(deliveryId)).state, 'failed')
    })

    test('a callback that overtakes the ack of the push in flight: confirmed when the ack is recorded', async () => {
      const { audioId, deliveryId } = await pendingDelivery()
      const pushed = await claim(deliveryId)
      await callback(audioId)
      assert.equal((await delivery(deliveryId)).state, 'in_flight', 'not confirmed before an ack')
      assert.ok(
        await deliveryQueue.complete(platform.context.db, pushed, window, { ...ack, startedAt: Date.now() }),
      )
      const confirmed = await delivery(deliveryId)
      assert.equal(confirmed.state, 'confirmed')
      assert.ok(confirmed.confirmedAt)
      assert.equal(confirmed.nextAttemptAt, null)
    })

    test('a receipt from before the push began does not confirm its ack', async () => {
      const { audioId, deliveryId } = await pendingDelivery()
      await callback(audioId)
      const pushed = await claim(deliveryId)
      assert.ok(
        await deliveryQueue.complete(platform.context.db, pushed, window, { ...ack, startedAt: Date.now() }),
      )
      assert.equal((await delivery(deliveryId)).state, 'acked', 'waits for a callback after this push')
      await callback(audioId)
      assert.equal((await delivery(deliveryId)).state, 'confirmed')
    })

    test('an acknowledged delivery being re-pushed is confirmed; the re-push then moves nothing', async () => {
      const { db } = platform.context
      const { audioId, deliveryId } = await pendingDelivery()
      const pushed = await claim(deliveryId)
      assert.ok(await deliveryQueue.complete(db, pushed, window, { ...ack, startedAt: Date.now() }))
      // The confirm window ends without a callback: a re-push.
      await db.query(`UPDATE deliveries SET due_at = now() - interval '1 second' WHERE delivery_id = $1`, [
        deliveryId,
      ])
      await deliveryQueue.sweep(db, 1000)
      const repush = await claim(deliveryId)
      assert.equal(repush.fence.claimNo, 2)
      await callback(audioId)
      assert.equal((await delivery(deliveryId)).state, 'confirmed')
      assert.equal(
        await deliveryQueue.complete(db, repush, window, { ...ack, startedAt: Date.now() }),
        false,
        'the re-push result is stale',
      )
      const after = await delivery(deliveryId)
      assert.equal(after.state, 'confirmed')
      assert.deepEqual(
        after.attempts.map((a) => [a.attemptNo, a.outcome]),
        [
          [1, 'acked'],
          [2, 'acked'],
        ],
        'both attempts recorded',
      )
    })
  })
}
