import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Change, ChangePage, PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  admin,
  adminCall,
  adminRefusal,
  createPartner,
  expectCode,
  ingest,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { everyChangeNumbered } from '@earshot/test-kit/change-feed'
import { eventually } from '@earshot/test-kit/eventually'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { listDeliveries } from '../deliveries/delivery-views.js'
import { watchFeedLag } from './feed-lag.js'

/** POST /openapi/v1/audios/changes, operators' updates and deletions. */

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

function latchPromise(): { done: Promise<void>; signal: () => void } {
  let signal = () => {}
  const done = new Promise<void>((resolve) => {
    signal = resolve
  })
  return { done, signal }
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
      await everyChangeNumbered(platform, partner.enterpriseId)
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
      const ch1 = { enterpriseId: a.enterpriseId, audioId: 'ch-1' }
      await adminCall(platform, 'attachTranscript', { params: ch1, body: transcript })
      const ch2 = { enterpriseId: a.enterpriseId, audioId: 'ch-2' }
      const updated = await adminCall(platform, 'updateRecording', {
        params: ch2,
        body: { title: 'renamed' },
      })
      assert.deepEqual(updated, { updated: 'ch-2' })
      assert.deepEqual(await adminCall(platform, 'deleteRecording', { params: ch2 }), { deleted: 'ch-2' })

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
      await everyChangeNumbered(platform, a.enterpriseId)
      const after = await page(a, { cursor: end.nextCursor })
      assert.deepEqual(
        after.items.map((item) => item.audioId),
        ['ch-3'],
      )
    })

    test('a malformed cursor or size is refused with 4001 naming the field', async () => {
      const pastTheEnd = Buffer.from('2:999999999').toString('base64url')
      for (const cursor of [
        'nope',
        'MTo=',
        // Base64url that is not canonical: it decodes as MjBx does, but the feed never spells it so.
        'MjoxX',
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
      const del1 = { enterpriseId: a.enterpriseId, audioId: 'del-1' }
      await adminCall(platform, 'deleteRecording', { params: del1 })
      const query = await a.call('/openapi/v1/audios', { audioId: 'del-1' })
      assert.equal((query.plaintext as { total: number }).total, 0)
      const again = await adminRefusal(platform, 'deleteRecording', { params: del1 })
      assert.equal(again.status, 404)
      assert.equal(again.code, 4040)
      const params = { enterpriseId: a.enterpriseId }
      const reused = await adminRefusal(platform, 'ingestRecording', { params, body: recording('del-1') })
      assert.equal(reused.code, 4001)
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
      assert.match(
        refusal.msg,
        /^nothing was imported; fix these lines and import the file again:\nline 2: audioId "del-1" was deleted/,
      )
      const otherTenant = await adminRefusal(platform, 'deleteRecording', {
        params: { enterpriseId: b.enterpriseId, audioId: 'ch-1' },
      })
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
      await adminCall(platform, 'updateRecording', {
        params: { enterpriseId: a.enterpriseId, audioId: 'upd-1' },
        body: {
          title: 'title of upd-1',
        },
      })
      await adminCall(platform, 'updateRecording', {
        params: { enterpriseId: a.enterpriseId, audioId: 'upd-1' },
        body: {
          recordedAt: '2026-06-01T00:00:00+02:00',
        },
      })
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

  describe(`the change feed's pages and lag (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    before(async () => {
      platform = await startTestPlatform(backend)
      partner = await createPartner(platform, 'Pages')
    })
    after(async () => {
      await platform?.stop()
    })

    async function page(plaintext: Record<string, unknown>) {
      const reply = await partner.call(CHANGES, plaintext)
      expectCode(reply, 2000)
      return { page: ChangePage.parse(reply.plaintext), sealedBytes: JSON.stringify(reply.body.data).length }
    }

    test('a page stops early at about 1 MiB sealed, with hasMore, and always holds one change', async () => {
      const text = 'x'.repeat(110_000)
      for (let i = 0; i < 30; i++) {
        await ingest(platform, partner.enterpriseId, {
          ...recording(`large-${i}`, false),
          transcript: { transcriptId: i, transcriptText: text, sentences: [], durationMs: 5, wordsCount: 1 },
        })
      }
      await everyChangeNumbered(platform, partner.enterpriseId)
      const seen: string[] = []
      let cursor: string | undefined
      for (;;) {
        const next = await page({ ...(cursor && { cursor }), size: 100 })
        assert.ok(next.page.items.length >= 1)
        assert.ok(next.sealedBytes <= 1.1 * 1024 * 1024, `${next.sealedBytes} bytes sealed`)
        seen.push(...next.page.items.map((item) => item.audioId))
        cursor = next.page.nextCursor
        if (!next.page.hasMore) break
        assert.ok(next.page.items.length < 30, 'stopped early')
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 30 }, (_, i) => `large-${i}`),
      )
      const one = await page({ size: 1 })
      assert.equal(one.page.items.length, 1)
      assert.equal(one.page.hasMore, true)
    })

    test('a change held back by a transaction still running is not in the feed; the lag says so', async (t) => {
      if (backend !== 'postgres') {
        t.skip('one PGlite connection runs one transaction at a time: nothing can hold a change back')
        return
      }
      const { db } = platform.context
      // Numbering waits for every older transaction of the server, another database's too: wait for it.
      await everyChangeNumbered(platform, partner.enterpriseId)
      let head = (await page({})).page
      while (head.hasMore) head = (await page({ cursor: head.nextCursor })).page
      let release = () => {}
      let pid = 0
      const opened = latchPromise()
      const holding = db.transaction(async (tx) => {
        const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_current_xact_id()')
        pid = row?.pid ?? 0
        opened.signal()
        await new Promise<void>((resolve) => {
          release = resolve
        })
      })
      await opened.done
      try {
        await ingest(platform, partner.enterpriseId, recording('held-back'))
        const held = (await page({ cursor: head.nextCursor })).page
        assert.deepEqual(held.items, [])
        assert.equal(held.hasMore, false)
        assert.ok((held.lagSeconds ?? 0) > 0, `lag ${held.lagSeconds}`)

        const warnings: { details: { holder?: { pid?: number; database?: string } }; message: string }[] = []
        const watch = watchFeedLag(
          db,
          { warn: (details, message) => warnings.push({ details, message }) },
          { intervalMs: 3_600_000, warnAfterSeconds: 0 },
        )
        await watch.look()
        watch.stop()
        // The oldest transaction holding the horizon is named: ours, unless another database of the server
        // (a suite running beside this one) has an older one, which holds every database's feed back too.
        const holder = warnings[0]?.details.holder
        const [own] = await db.query<{ name: string }>('SELECT current_database() AS name')
        if (holder?.pid !== pid) assert.notEqual(holder?.database, own?.name, JSON.stringify(warnings))
        assert.match(
          warnings[0]?.message ?? '',
          new RegExp(`backend pid ${holder?.pid} \\(database \\w+, open for \\d+ s`),
        )
        const metrics = await fetch(`${platform.adminUrl}/metrics`, {
          headers: { authorization: `Bearer ${platform.adminToken}` },
        }).then((response) => response.text())
        assert.match(
          metrics,
          /^earshot_change_feed_lag_seconds 0\.\d+|^earshot_change_feed_lag_seconds [1-9]/m,
        )
      } finally {
        release()
        await holding
      }
      await everyChangeNumbered(platform, partner.enterpriseId)
      const resumed = (await page({ cursor: head.nextCursor })).page
      assert.deepEqual(
        resumed.items.map((item) => item.audioId),
        ['held-back'],
      )
      assert.equal(resumed.lagSeconds, 0)
    })
  })

  describe(`deletion and push (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let receiver: TestReceiver
    // The partner refuses every data push of this recording: it never has the recording's data.
    const refused = 'gone-1'

    before(async () => {
      platform = await startTestPlatform(backend, { pushRetryScheduleSeconds: [0.05, 0.05, 0.05] })
      partner = await createPartner(platform, 'Pushed')
      receiver = await startTestReceiver(partner.secret, {
        answer: (push) =>
          push.event.audioId === refused && push.event.eventType !== PushEventType.DELETED
            ? { status: 503, body: { code: 5030 } }
            : { status: 200, body: { code: 2000 } },
      })
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: receiver.url },
      })
    })
    after(async () => {
      await platform?.stop()
      await receiver?.close()
    })

    test('deleting cancels what was not confirmed and pushes recording.deleted, confirmed by its ack', async () => {
      await ingest(platform, partner.enterpriseId, recording(refused))
      await eventually(
        async () => receiver.received.some((push) => push.event.audioId === 'gone-1'),
        10_000,
        'the first push of gone-1',
      )
      await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId: 'gone-1' },
      })
      const pushed = await eventually(
        async () => receiver.received.find((push) => push.event.eventType === PushEventType.DELETED),
        10_000,
        'the push of recording.deleted',
      )
      assert.deepEqual(pushed.event.data, {})
      assert.equal(pushed.event.audioId, 'gone-1')
      const states = async () =>
        (await listDeliveries(platform.context.db, { audioId: 'gone-1', limit: 10 }))
          .map((delivery) => [delivery.eventType, delivery.state])
          .sort()
      const expected = [
        [PushEventType.AUDIO_READY, 'cancelled'],
        [PushEventType.DELETED, 'confirmed'],
      ].sort()
      await eventually(
        async () => JSON.stringify(await states()) === JSON.stringify(expected),
        10_000,
        'states',
      )
      // The partner never had its data (its only data push failed): a callback tells it nothing.
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'gone-1' }), 4040)
    })

    test('a callback for a deleted recording answers 2000 when the partner had it', async () => {
      await ingest(platform, partner.enterpriseId, recording('had-1'))
      await eventually(
        async () =>
          (await listDeliveries(platform.context.db, { audioId: 'had-1', limit: 1 }))[0]?.state === 'acked',
        10_000,
        'the data push acknowledged',
      )
      await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId: 'had-1' },
      })
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'had-1' }), 2000)

      // A receipt before the deletion is as good.
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: null },
      })
      await ingest(platform, partner.enterpriseId, recording('had-2'))
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'had-2' }), 2000)
      await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId: 'had-2' },
      })
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'had-2' }), 2000)
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: receiver.url },
      })
    })

    test('a callback for a deleted recording the partner never had is 4040', async () => {
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: null },
      })
      await ingest(platform, partner.enterpriseId, recording('never-had'))
      await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId: 'never-had' },
      })
      expectCode(await partner.call('/openapi/v1/callback', { audioId: 'never-had' }), 4040)
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: receiver.url },
      })
    })
  })
}
