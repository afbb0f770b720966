import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Change, ChangePage, PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin, createPartner, expectCode, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually, startTestReceiver, type TestReceiver } from '@earshot/test-kit/push-receiver'
import { listDeliveries } from '../push/delivery-store.js'

/** POST /openapi/v1/audios/changes, operators' updates and deletions (DESIGN.md §10). */

const CHANGES = '/openapi/v1/audios/changes'

function recording(audioId: string, withAudio = true) {
  return {
    audioId,
    deviceUid: 'dev-1',
    title: `title of ${audioId}`,
    recordedAt: '2026-05-01T08:00:00Z',
    ...(withAudio && { denoiseUrl: `https://cdn.example/${audioId}.mp3`, recordDuration: 1000 }),
    ...(!withAudio && {
      transcript: { transcriptId: 1, transcriptText: 'hi', sentences: [], durationMs: 5, wordsCount: 1 },
    }),
  }
}

const transcript = { transcriptId: 7, transcriptText: 'hello', sentences: [], durationMs: 10, wordsCount: 1 }

for (const backend of testBackends) {
  describe(`the change feed (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let a: TestPartner
    let b: TestPartner

    async function page(partner: TestPartner, plaintext: Record<string, unknown>): Promise<ChangePage> {
      const reply = await partner.call(CHANGES, plaintext)
      expectCode(reply, 2000)
      return ChangePage.parse(reply.plaintext)
    }

    async function all(partner: TestPartner, size = 100): Promise<Change[]> {
      const items: Change[] = []
      let cursor: string | undefined
      for (;;) {
        const next = await page(partner, { ...(cursor && { cursor }), size })
        items.push(...next.items)
        cursor = next.nextCursor
        if (!next.hasMore) return items
      }
    }

    before(async () => {
      platform = await startTestPlatform(backend)
      a = await createPartner(platform, 'Alpha')
      b = await createPartner(platform, 'Beta')
    })
    after(async () => {
      await platform?.stop()
    })

    test('every change of an enterprise, in order, each with the current data or none once deleted', async () => {
      await ingest(platform, a.enterpriseId, recording('ch-1'))
      await ingest(platform, b.enterpriseId, recording('ch-other'))
      await ingest(platform, a.enterpriseId, recording('ch-2'))
      const attached = await admin(
        platform,
        'PUT',
        `/enterprises/${a.enterpriseId}/recordings/ch-1/transcript`,
        transcript,
      )
      assert.equal(attached.status, 200)
      const updated = await admin(platform, 'PATCH', `/enterprises/${a.enterpriseId}/recordings/ch-2`, {
        title: 'renamed',
      })
      assert.deepEqual(updated, { status: 200, body: { updated: 'ch-2' } })
      const deleted = await admin(platform, 'DELETE', `/enterprises/${a.enterpriseId}/recordings/ch-2`)
      assert.deepEqual(deleted, { status: 200, body: { deleted: 'ch-2' } })

      const items = await all(a, 2)
      assert.deepEqual(
        items.map((item) => [item.audioId, item.change, item.data === undefined]),
        [
          ['ch-1', 'created', false],
          ['ch-2', 'created', true],
          ['ch-1', 'transcript_added', false],
          ['ch-2', 'updated', true],
          ['ch-2', 'deleted', true],
        ],
      )
      for (let i = 1; i < items.length; i++) assert.ok((items[i]?.seq ?? 0) > (items[i - 1]?.seq ?? 0))
      // Data is the recording as it is now: set A once its transcript exists, even on its `created` entry.
      assert.equal((items[0]?.data as { transcriptText?: string } | undefined)?.transcriptText, 'hello')
      assert.deepEqual(
        (await all(b)).map((item) => item.audioId),
        ['ch-other'],
      )

      // Resuming from the last cursor gives nothing new until something changes.
      const head = await page(a, {})
      const end = await page(a, { cursor: head.nextCursor })
      assert.deepEqual([end.items, end.hasMore, end.nextCursor], [[], false, head.nextCursor])
      await ingest(platform, a.enterpriseId, recording('ch-3'))
      const after = await page(a, { cursor: end.nextCursor })
      assert.deepEqual(
        after.items.map((item) => item.audioId),
        ['ch-3'],
      )
    })

    test('a malformed cursor or size is refused with 4001 naming the field', async () => {
      const pastTheEnd = Buffer.from('1:999999999').toString('base64url')
      for (const cursor of [
        'nope',
        'MTo=',
        Buffer.from('1:-1').toString('base64url'),
        'a'.repeat(201),
        pastTheEnd,
      ]) {
        const reply = await a.call(CHANGES, { cursor })
        expectCode(reply, 4001)
        assert.match(String(reply.body.msg), /cursor/)
      }
      for (const size of [0, 101, 1.5]) {
        const reply = await a.call(CHANGES, { size })
        expectCode(reply, 4001)
        assert.match(String(reply.body.msg), /size/)
      }
      expectCode(await a.call(CHANGES, { page: 1 }), 4001)
    })

    test('a deleted recording leaves the query, its audioId stays taken, and a second delete is 4040', async () => {
      await ingest(platform, a.enterpriseId, recording('del-1'))
      assert.equal(
        (await admin(platform, 'DELETE', `/enterprises/${a.enterpriseId}/recordings/del-1`)).status,
        200,
      )
      const query = await a.call('/openapi/v1/audios', { audioId: 'del-1' })
      assert.equal((query.plaintext as { total: number }).total, 0)
      const again = await admin(platform, 'DELETE', `/enterprises/${a.enterpriseId}/recordings/del-1`)
      assert.equal(again.status, 404)
      assert.equal((again.body as { code: number }).code, 4040)
      const reused = await admin(
        platform,
        'POST',
        `/enterprises/${a.enterpriseId}/recordings`,
        recording('del-1'),
      )
      assert.equal((reused.body as { code: number }).code, 4001)
      const reimport = await fetch(
        `${platform.adminUrl}/admin/v1/enterprises/${a.enterpriseId}/recordings/import`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
          body: `${JSON.stringify(recording('del-new'))}\n${JSON.stringify(recording('del-1'))}\n`,
        },
      )
      const refusal = (await reimport.json()) as { code: number; msg: string }
      assert.equal(refusal.code, 4001)
      assert.match(refusal.msg, /nothing was imported; line 2: audioId "del-1" was deleted/)
      const otherTenant = await admin(platform, 'DELETE', `/enterprises/${b.enterpriseId}/recordings/ch-1`)
      assert.equal(otherTenant.status, 404)
    })

    test('an update is validated field by field, and one that changes nothing is not a change', async () => {
      await ingest(platform, a.enterpriseId, recording('upd-1', false))
      const refusals: [unknown, RegExp][] = [
        [{}, /at least one/],
        [{ recordedAt: 'yesterday' }, /recordedAt/],
        [{ audioId: 'x' }, /audioId/],
        [{ denoiseUrl: 'https://cdn.example/x.mp3' }, /denoiseUrl/],
      ]
      for (const [body, message] of refusals) {
        const reply = await admin<{ code: number; msg: string }>(
          platform,
          'PATCH',
          `/enterprises/${a.enterpriseId}/recordings/upd-1`,
          body,
        )
        assert.equal(reply.body.code, 4001, JSON.stringify(reply.body))
        assert.match(reply.body.msg, message)
      }
      const before = (await all(a)).length
      const same = await admin(platform, 'PATCH', `/enterprises/${a.enterpriseId}/recordings/upd-1`, {
        title: 'title of upd-1',
      })
      assert.equal(same.status, 200)
      const moved = await admin(platform, 'PATCH', `/enterprises/${a.enterpriseId}/recordings/upd-1`, {
        recordedAt: '2026-06-01T00:00:00+02:00',
      })
      assert.equal(moved.status, 200)
      const items = (await all(a)).slice(before)
      assert.deepEqual(
        items.map((item) => [item.audioId, item.change]),
        [['upd-1', 'updated']],
      )
      const query = await a.call('/openapi/v1/audios', {
        startTime: '2026-05-31T22:00:00Z',
        endTime: '2026-06-01T00:00:00Z',
      })
      assert.deepEqual(
        (query.plaintext as { items: { audioId: string }[] }).items.map((item) => item.audioId),
        ['upd-1'],
      )
    })
  })

  describe(`deletion and push (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let receiver: TestReceiver
    let answering = true

    before(async () => {
      platform = await startTestPlatform(backend, { pushRetryScheduleSeconds: [0.05, 0.05, 0.05] })
      partner = await createPartner(platform, 'Pushed')
      receiver = await startTestReceiver(partner.secret, {
        answer: () =>
          answering ? { status: 200, body: { code: 2000 } } : { status: 503, body: { code: 5030 } },
      })
      await admin(platform, 'PUT', `/enterprises/${partner.enterpriseId}/push-url`, { pushUrl: receiver.url })
    })
    after(async () => {
      await platform?.stop()
      await receiver?.close()
    })

    test('deleting cancels what was not confirmed and pushes recording.deleted; its callback confirms it', async () => {
      answering = false
      await ingest(platform, partner.enterpriseId, recording('gone-1'))
      await eventually(
        async () => receiver.received.some((push) => push.event.audioId === 'gone-1'),
        10_000,
        'the first push of gone-1',
      )
      answering = true
      assert.equal(
        (await admin(platform, 'DELETE', `/enterprises/${partner.enterpriseId}/recordings/gone-1`)).status,
        200,
      )
      const pushed = await eventually(
        async () => receiver.received.find((push) => push.event.eventType === PushEventType.DELETED),
        10_000,
        'the push of recording.deleted',
      )
      assert.deepEqual(pushed.event.data, {})
      assert.equal(pushed.event.audioId, 'gone-1')
      const deliveries = await listDeliveries(platform.context.db, { audioId: 'gone-1', limit: 10 })
      assert.deepEqual(
        deliveries.map((delivery) => [delivery.eventType, delivery.state]).sort(),
        [
          [PushEventType.AUDIO_READY, 'cancelled'],
          [PushEventType.DELETED, 'acked'],
        ].sort(),
      )
      // The partner had it (it acknowledged the deletion's push): its callback is 2000 and confirms that push.
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'gone-1' }), 2000)
      const [deletion] = await listDeliveries(platform.context.db, {
        audioId: 'gone-1',
        state: 'confirmed',
        limit: 1,
      })
      assert.equal(deletion?.eventType, PushEventType.DELETED)
    })

    test('a callback for a deleted recording the partner never had is 4040', async () => {
      await admin(platform, 'PUT', `/enterprises/${partner.enterpriseId}/push-url`, { pushUrl: null })
      await ingest(platform, partner.enterpriseId, recording('never-had'))
      assert.equal(
        (await admin(platform, 'DELETE', `/enterprises/${partner.enterpriseId}/recordings/never-had`)).status,
        200,
      )
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'never-had' }), 4040)
      await admin(platform, 'PUT', `/enterprises/${partner.enterpriseId}/push-url`, { pushUrl: receiver.url })
    })
  })
}
