import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type EndpointSchema, type JsonObject, ResponseCode } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  ingest,
  partnerFor,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { callbackSender, startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import type { Static } from 'typebox'
import { listAudit } from '../audit/audit-trail.js'
import type { ReceiverCheckReport } from '../receiver-check/receiver-check.js'
import type { DeliveryPage } from './partner-deliveries.js'

type Endpoint = Static<typeof EndpointSchema>

/** The partner API's self-service routes: a partner manages its own endpoints, deliveries and key. */

const compressed = {
  pushRetryScheduleSeconds: [0.1],
  pushConfirmWindowSeconds: 0.4,
  pushTimeoutSeconds: 0.5,
}

let counter = 0
const recording = () => ({
  deviceUid: 'DEV-SELF',
  title: `self-service ${++counter}`,
  recordedAt: '2026-03-01T10:00:00Z',
  denoiseUrl: `https://media.example/${counter}.mp3`,
  recordDuration: 1000,
})

for (const backend of testBackends) {
  describe(`${backend}: partner self-service`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let alpha: TestPartner
    let beta: TestPartner
    const receivers: TestReceiver[] = []

    before(async () => {
      platform = await startTestPlatform(backend, compressed)
      alpha = await createPartner(platform, 'Alpha')
      beta = await createPartner(platform, 'Beta')
    })
    after(async () => {
      for (const receiver of receivers) await receiver.close()
      await platform.stop()
    })

    async function data<T = JsonObject>(partner: TestPartner, action: string, plaintext: JsonObject = {}) {
      const reply = await partner.call(`/openapi/v1/${action}`, plaintext)
      assert.equal(reply.body.code, 2000, `${action}: ${JSON.stringify(reply.body)}`)
      return reply.plaintext as T
    }
    const endpoints = async (partner: TestPartner) =>
      (await data<{ items: Endpoint[] }>(partner, 'endpoints/list')).items
    const deliveries = (partner: TestPartner, filter: JsonObject = {}) =>
      data<DeliveryPage>(partner, 'deliveries/list', filter)

    async function receiver(partner: TestPartner, failing: { on: boolean }) {
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const started = await startTestReceiver(partner.secret, {
        answer: () =>
          failing.on
            ? { status: 503, body: { code: 5030, msg: 'disk full on receiver-7' } }
            : { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if (answer.status === 200) void callback(push.event.audioId)
        },
      })
      receivers.push(started)
      return started
    }

    test('endpoints: add subscribed to transcripts only, list with health, update, disable, remove', async () => {
      const partner = await createPartner(platform, 'Endpoints')
      assert.deepEqual(await endpoints(partner), [])
      const added = await data<Endpoint>(partner, 'endpoints/add', {
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['transcript_ready'],
        description: 'transcripts only',
        maxPerSecond: 5,
      })
      assert.deepEqual(added.eventTypes, ['recording.transcript_ready'])
      assert.equal(added.enterpriseId, partner.enterpriseId)
      assert.equal(added.health.state, 'healthy')
      const updated = await data<Endpoint>(partner, 'endpoints/update', {
        endpointId: added.endpointId,
        enabled: false,
        eventTypes: ['recording.audio_ready', 'recording.transcript_ready'],
      })
      assert.equal(updated.enabled, false)
      assert.deepEqual(updated.eventTypes, ['recording.audio_ready', 'recording.transcript_ready'])
      assert.deepEqual(await endpoints(partner), [updated])
      const removed = await data(partner, 'endpoints/remove', { endpointId: added.endpointId })
      assert.deepEqual(removed, { endpointId: added.endpointId, cancelled: 0 })
      assert.deepEqual(await endpoints(partner), [])
    })

    test("another enterprise's endpoint and delivery ids answer 4040, like ids that never were", async () => {
      const added = await data<Endpoint>(beta, 'endpoints/add', { url: 'http://127.0.0.1:9/beta' })
      const audioId = await ingest(platform, beta.enterpriseId, recording())
      const [row] = await platform.context.db.query<{ id: number }>(
        'SELECT delivery_id::int AS id FROM deliveries WHERE audio_id = $1 LIMIT 1',
        [audioId],
      )
      for (const [action, plaintext] of [
        ['endpoints/update', { endpointId: added.endpointId, enabled: false }],
        ['endpoints/remove', { endpointId: added.endpointId }],
        ['deliveries/replay', { deliveryId: row?.id }],
        ['endpoints/update', { endpointId: 999_999, enabled: false }],
        ['deliveries/replay', { deliveryId: 999_999 }],
      ] as const) {
        const reply = await alpha.call(`/openapi/v1/${action}`, plaintext as JsonObject)
        expectCode(reply, ResponseCode.NOT_FOUND)
      }
      assert.deepEqual(
        (await deliveries(alpha, { audioId })).items,
        [],
        "another's audioId just matches nothing",
      )
      const [still] = await endpoints(beta)
      assert.equal(still?.enabled, true)
    })

    test("a URL another enterprise pushes to is refused: its health and failures are that enterprise's", async () => {
      const first = await createPartner(platform, 'Owner of the URL')
      const second = await createPartner(platform, 'Other')
      const url = 'http://127.0.0.1:9/shared-receiver'
      await data(first, 'endpoints/add', { url })
      const added = await second.call('/openapi/v1/endpoints/add', { url })
      expectCode(added, ResponseCode.INVALID_PARAMETER)
      assert.match(added.body.msg as string, /^url: .*another enterprise/)
      const own = await data<Endpoint>(second, 'endpoints/add', { url: 'http://127.0.0.1:9/own-receiver' })
      const moved = await second.call('/openapi/v1/endpoints/update', { endpointId: own.endpointId, url })
      expectCode(moved, ResponseCode.INVALID_PARAMETER)
      assert.deepEqual(
        (await endpoints(second)).map((endpoint) => endpoint.url),
        ['http://127.0.0.1:9/own-receiver'],
      )
      // An operator may still share one URL between enterprises.
      const shared = await adminCall(platform, 'addEndpoint', {
        params: { enterpriseId: second.enterpriseId },
        body: { url },
      })
      assert.equal(shared.url, url)
    })

    test('two enterprises adding one URL at once: exactly one has it', async () => {
      const url = `http://127.0.0.1:9/race-${backend}`
      const racers = [await createPartner(platform, 'Racer A'), await createPartner(platform, 'Racer B')]
      const replies = await Promise.all(
        racers.map((racer) => racer.call('/openapi/v1/endpoints/add', { url })),
      )
      assert.deepEqual(replies.map((reply) => reply.body.code).sort(), [2000, ResponseCode.INVALID_PARAMETER])
      const owners = await platform.context.db.query(
        'SELECT DISTINCT enterprise_id FROM endpoints WHERE url = $1 AND removed_at IS NULL',
        [url],
      )
      assert.equal(owners.length, 1)
    })

    test("deliveries: a failed attempt shows the receiver's answer; replay since a time confirms them", async () => {
      const partner = await createPartner(platform, 'Deliveries')
      const failing = { on: true }
      const hook = await receiver(partner, failing)
      const since = new Date(Date.now() - 1000).toISOString()
      await data(partner, 'endpoints/add', { url: hook.url, eventTypes: ['recording.audio_ready'] })
      const audioIds = [
        await ingest(platform, partner.enterpriseId, recording()),
        await ingest(platform, partner.enterpriseId, recording()),
      ]
      const failed = await eventually(
        async () => {
          const page = await deliveries(partner, { state: 'failed' })
          return page.items.length === 2 && page
        },
        20_000,
        'both deliveries failed',
      )
      const [latest] = failed.items
      assert.equal(latest?.audioId, audioIds[1])
      const attempts = latest?.attempts ?? []
      assert.equal(attempts.length, 2)
      assert.equal(attempts[0]?.httpStatus, 503)
      assert.equal(attempts[0]?.answer, '{"code":5030,"msg":"disk full on receiver-7"}')
      const firstPage = await deliveries(partner, { size: 1 })
      assert.equal(firstPage.hasMore, true)
      const secondPage = await deliveries(partner, { size: 1, cursor: firstPage.nextCursor })
      assert.notEqual(secondPage.items[0]?.deliveryId, firstPage.items[0]?.deliveryId)

      failing.on = false
      const replayed = await data(partner, 'deliveries/replay', { states: ['failed'], since })
      assert.deepEqual(replayed, { replayed: 2 })
      await eventually(
        async () => (await deliveries(partner, { state: 'confirmed' })).items.length === 2,
        20_000,
        'both confirmed after the replay',
      )
      const refused = await partner.call('/openapi/v1/deliveries/replay', { states: ['failed'] })
      expectCode(refused, ResponseCode.INVALID_PARAMETER)
      assert.match(refused.body.msg as string, /since/)
    })

    test('the receiver check runs on a URL and reports each item', async () => {
      const partner = await createPartner(platform, 'Check')
      const hook = await receiver(partner, { on: false })
      const report = await data<ReceiverCheckReport>(partner, 'endpoints/check', {
        url: hook.url,
        callbackWithinSeconds: 2,
      })
      assert.equal(report.enterpriseId, partner.enterpriseId)
      assert.ok(report.items.length > 0)
      const valid = report.items.find((item) => item.id === 'valid-push')
      assert.equal(valid?.passed, true)
    })

    test('rotating the key answers the new secret sealed with the old key; both work for the grace', async () => {
      const partner = await createPartner(platform, 'Rotate')
      const rotated = await data<{ keyVersion: number; secret: string }>(partner, 'key/rotate')
      assert.equal(rotated.keyVersion, partner.keyVersion + 1)
      const next = partnerFor(platform, {
        enterpriseId: partner.enterpriseId,
        keyVersion: rotated.keyVersion,
        secret: rotated.secret,
      })
      assert.equal((await next.call('/openapi/v1/audios', {})).body.code, 2000)
      assert.equal(
        (await partner.call('/openapi/v1/audios', {})).body.code,
        2000,
        'the old key, within the grace',
      )
      const rows = await listAudit(platform.context.db, {
        enterpriseId: partner.enterpriseId,
        limit: 10,
        enterprises: null,
      })
      const row = rows.find((each) => each.operation === 'rotateKey')
      assert.equal(row?.actor.kind, 'partner')
      assert.match(row?.actor.id ?? '', /^token [A-Za-z0-9_-]{16}$/)
      assert.ok(!JSON.stringify(row).includes(rotated.secret), 'no secret in the trail')
    })

    test('every change through the partner API is in the audit trail with its token as actor', async () => {
      const partner = await createPartner(platform, 'Audited')
      const added = await data<Endpoint>(partner, 'endpoints/add', { url: 'http://127.0.0.1:9/a' })
      await data(partner, 'endpoints/update', { endpointId: added.endpointId, description: 'x' })
      await data(partner, 'deliveries/replay', {
        states: ['failed', 'unconfirmed'],
        since: '2026-01-01T00:00:00Z',
      })
      await data(partner, 'portal/link', { access: 'manage' })
      await data(partner, 'endpoints/remove', { endpointId: added.endpointId })
      await data(partner, 'endpoints/list')
      const trail = await listAudit(platform.context.db, {
        enterpriseId: partner.enterpriseId,
        limit: 20,
        enterprises: null,
      })
      // The enterprise itself was created by an operator.
      const rows = trail.filter((row) => row.operation !== 'createEnterprise')
      const operations = rows.map((row) => row.operation).sort()
      assert.deepEqual(operations, [
        'addEndpoint',
        'mintPortalLink',
        'removeEndpoint',
        'replayDeliveries',
        'updateEndpoint',
      ])
      for (const row of rows) {
        assert.equal(row.actor.kind, 'partner')
        assert.match(row.actor.id, /^token /)
        assert.equal(row.target.enterpriseId, partner.enterpriseId)
        assert.equal(row.outcome, 'ok')
      }
    })

    test('a portal link is a one-time URL under /portal/enter/ that expires', async () => {
      const link = await data<{ url: string; expiresAt: string }>(alpha, 'portal/link', {})
      assert.match(link.url, /\/portal\/enter\/ptl_[A-Za-z0-9_-]{43}$/)
      assert.ok(Date.parse(link.expiresAt) > Date.now())
      const refused = await alpha.call('/openapi/v1/portal/link', { access: 'owner' })
      expectCode(refused, ResponseCode.INVALID_PARAMETER)
      assert.match(refused.body.msg as string, /access/)
    })
  })
}
