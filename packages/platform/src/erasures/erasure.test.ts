import assert from 'node:assert/strict'
import { createPublicKey, verify } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { type JsonObject, PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  adminRefusal,
  createPartner,
  expectCode,
  ingest,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import canonicalize from 'canonicalize'
import { listAudit } from '../audit/audit-trail.js'

/** Erasure requests and retention: what they delete, scrub, wait for, and report. */

const compressed = { pushRetryScheduleSeconds: [0.1], pushConfirmWindowSeconds: 0.4, pushTimeoutSeconds: 0.5 }

let counter = 0
const recording = (deviceUid: string, recordedAt = '2026-03-01T10:00:00Z') => ({
  deviceUid,
  title: `title-${deviceUid}-${++counter}`,
  recordedAt,
  denoiseUrl: `https://media.example/${counter}.mp3`,
  recordDuration: 1000,
  transcript: {
    transcriptId: counter,
    transcriptText: `secret words ${deviceUid} ${counter}`,
    sentences: [{ beginTime: 0, endTime: 500, text: `secret words ${deviceUid} ${counter}` }],
    durationMs: 500,
    wordsCount: 3,
  },
})

for (const backend of testBackends) {
  describe(`${backend}: erasure`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let receiver: TestReceiver
    /** The pushes' audioIds the receiver stored, and erased after their deletion. */
    const erased = new Set<string>()

    before(async () => {
      platform = await startTestPlatform(backend, compressed)
      partner = await createPartner(platform, 'Erasing')
      receiver = await startTestReceiver(partner.secret, {
        // The receiver echoes what it received: the kept answer holds recording content until scrubbed.
        answer: (push) => ({ status: 200, body: { code: 2000, echo: JSON.stringify(push.event.data) } }),
        afterAnswer: (push) => {
          const { audioId, eventType } = push.event
          if (eventType === PushEventType.DELETED) {
            void partner
              .call('/openapi/v1/callback', { audioId, erased: true })
              .then(() => erased.add(audioId))
          } else void partner.call('/openapi/v1/callback', { audioId })
        },
      })
      await partner.call('/openapi/v1/endpoints/add', { url: receiver.url })
    })
    after(async () => {
      await receiver.close()
      await platform.stop()
    })

    const show = (erasureId: number) => adminCall(platform, 'showErasure', { params: { erasureId } })

    test("a device's recordings are deleted, scrubbed, acknowledged, confirmed and reported", async () => {
      const mine: string[] = []
      for (let i = 0; i < 5; i++)
        mine.push(await ingest(platform, partner.enterpriseId, recording('DEV-GONE')))
      const kept = await ingest(platform, partner.enterpriseId, recording('DEV-KEPT'))
      await eventually(
        async () => {
          const pushed = new Set(receiver.received.map((push) => push.event.audioId))
          return [...mine, kept].every((audioId) => pushed.has(audioId))
        },
        20_000,
        'every recording pushed',
      )
      const created = await adminCall(platform, 'createErasure', {
        params: { enterpriseId: partner.enterpriseId },
        body: { deviceUid: 'DEV-GONE', reason: 'ticket 42' },
      })
      assert.deepEqual(created, { erasureId: created.erasureId, recordings: 5 })
      const done = await eventually(
        async () => {
          const body = await show(created.erasureId)
          return body.state === 'confirmed' && body
        },
        30_000,
        'the erasure confirmed',
      )
      assert.equal(done.kind, 'device')
      assert.equal(done.recordings, 5)
      assert.deepEqual(
        done.endpoints.map(({ endpointId: _, ...progress }) => progress),
        [{ deletions: 5, acknowledged: 5, confirmed: 5 }],
      )
      assert.ok(mine.every((audioId) => erased.has(audioId)))
      const db = platform.context.db
      const left = await db.query(
        `SELECT 1 FROM recordings WHERE device_uid = 'DEV-GONE'
         UNION ALL SELECT 1 FROM recording_device_day_counts WHERE device_uid = 'DEV-GONE'
         UNION ALL SELECT 1 FROM delivery_attempts WHERE answer LIKE '%DEV-GONE%'`,
      )
      assert.equal(left.length, 0)
      const others = await db.query(`SELECT 1 FROM delivery_attempts WHERE answer LIKE '%DEV-KEPT%'`)
      assert.ok(others.length > 0, 'what was not erased keeps its answers')
      assert.ok(!JSON.stringify(done).includes('DEV-GONE'))

      const signed = await adminCall(platform, 'erasureReport', { params: { erasureId: created.erasureId } })
      assert.equal(signed.report.state, 'confirmed')
      assert.deepEqual(signed.report.audioIds, [...mine].sort())
      assert.ok(!JSON.stringify(signed).includes('DEV-GONE'))
      const jwk = (await (
        await fetch(`${platform.partnerUrl}/.well-known/earshot-erasure-key`)
      ).json()) as JsonObject
      assert.equal(jwk.kty, 'OKP')
      const key = createPublicKey({ key: jwk as never, format: 'jwk' })
      const payload = Buffer.from(canonicalize(signed.report) as string)
      assert.ok(verify(null, payload, key, Buffer.from(signed.signature, 'base64url')))
      const tampered = Buffer.from(canonicalize({ ...signed.report, recordings: 4 }) as string)
      assert.ok(!verify(null, tampered, key, Buffer.from(signed.signature, 'base64url')))
      const trail = await listAudit(db, { limit: 1000, enterprises: null })
      assert.ok(trail.some((row) => row.operation === 'createErasure'))
      assert.ok(!JSON.stringify(trail).includes('DEV-GONE'))
    })

    test('audioIds: unknown ones refused with 4040; a deleted one is scrubbed again', async () => {
      const audioId = await ingest(platform, partner.enterpriseId, recording('DEV-ONE'))
      const unknown = await adminRefusal(platform, 'createErasure', {
        params: { enterpriseId: partner.enterpriseId },
        body: { audioIds: [audioId, 'no-such-recording'] },
      })
      assert.equal(unknown.code, 4040)
      assert.match(unknown.message, /no-such-recording/)
      const both = await adminRefusal(platform, 'createErasure', {
        params: { enterpriseId: partner.enterpriseId },
        body: { audioIds: [audioId], deviceUid: 'DEV-ONE' },
      })
      assert.equal(both.code, 4001)
      await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId },
      })
      const created = await adminCall(platform, 'createErasure', {
        params: { enterpriseId: partner.enterpriseId },
        body: { audioIds: [audioId] },
      })
      assert.equal(created.recordings, 1)
      await eventually(
        async () => (await show(created.erasureId)).state !== 'running',
        20_000,
        'the erasure complete',
      )
    })

    test('an erasure confirmation: 4001 for a recording not deleted, 4040 for one the partner never had', async () => {
      const audioId = await ingest(platform, partner.enterpriseId, recording('DEV-LIVE'))
      expectCode(await partner.call('/openapi/v1/callback', { audioId, erased: true }), 4001)
      const stranger = await createPartner(platform, 'Stranger')
      expectCode(await stranger.call('/openapi/v1/callback', { audioId, erased: true }), 4040)
    })

    test('a retention policy erases what is older, as the platform', async () => {
      const retained = await createPartner(platform, 'Retained')
      const day = 86_400_000
      const old = await ingest(
        platform,
        retained.enterpriseId,
        recording('DEV-OLD', new Date(Date.now() - 40 * day).toISOString()),
      )
      const young = await ingest(
        platform,
        retained.enterpriseId,
        recording('DEV-OLD', new Date(Date.now() - 20 * day).toISOString()),
      )
      const updated = await adminCall(platform, 'updateEnterprise', {
        params: { enterpriseId: retained.enterpriseId },
        body: { retentionDays: 30 },
      })
      assert.equal(updated.retentionDays, 30)
      const run = await eventually(
        async () => {
          const { erasures } = await adminCall(platform, 'listErasures', {
            query: { enterpriseId: String(retained.enterpriseId) },
          })
          return erasures[0]?.state === 'confirmed' && erasures[0]
        },
        30_000,
        'the retention run confirmed',
      )
      assert.equal(run?.kind, 'retention')
      assert.equal(run?.requestedBy.kind, 'platform')
      const left = await platform.context.db.query<{ audio_id: string }>(
        'SELECT audio_id FROM recordings WHERE enterprise_id = $1',
        [retained.enterpriseId],
      )
      assert.deepEqual(
        left.map((row) => row.audio_id),
        [young],
      )
      assert.notEqual(old, young)
      const trail = await listAudit(platform.context.db, { limit: 1000, enterprises: null })
      assert.ok(trail.some((row) => row.operation === 'runRetention' && row.actor.kind === 'platform'))
      const cleared = await adminCall(platform, 'updateEnterprise', {
        params: { enterpriseId: retained.enterpriseId },
        body: { retentionDays: 0 },
      })
      assert.equal(cleared.retentionDays, null)
    })
  })
}
