import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { everyChangeNumbered } from '@earshot/test-kit/change-feed'
import { eventually } from '@earshot/test-kit/eventually'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { sweepOrphanedMedia } from './media-upkeep.js'
import { storeClaimed } from './upload-claims.js'

/** Stored audio end to end: upload, links in the query, the feed and the push, and the media route. */

const AUDIOS = '/openapi/v1/audios'
const CHANGES = '/openapi/v1/audios/changes'

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

for (const backend of testBackends) {
  describe(`stored audio (${backend})`, { timeout: 90_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let receiver: TestReceiver
    let now = Date.parse('2026-11-26T10:00:00Z')
    let counter = 0

    before(async () => {
      platform = await startTestPlatform(backend, { mediaMaxBytes: 1_000_000 }, { clock: () => now })
      partner = await createPartner(platform, 'Media')
      receiver = await startTestReceiver(partner.secret)
      await adminClientOf(platform).setPushUrl(partner.enterpriseId, receiver.url)
    })
    after(async () => {
      await platform?.stop()
      await receiver?.close()
    })

    async function newRecording(extra: Record<string, unknown> = {}): Promise<string> {
      return ingest(platform, partner.enterpriseId, {
        audioId: `media-${backend}-${++counter}`,
        deviceUid: 'dev-media',
        title: 'with audio',
        recordedAt: '2026-11-01T08:00:00Z',
        ...extra,
        ...(extra.transcript === undefined && { denoiseUrl: 'https://cdn.example/a.mp3', recordDuration: 1 }),
      })
    }

    function upload(audioId: string, bytes: Buffer, recordDuration?: number) {
      return adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, bytes, {
        contentType: 'audio/wav',
        recordDuration,
      })
    }

    async function queried(audioId: string): Promise<Record<string, unknown>> {
      const reply = await partner.call(AUDIOS, { audioId })
      const items = (reply.plaintext as { items: { data: Record<string, unknown> }[] }).items
      return (items[0] as { data: Record<string, unknown> }).data
    }

    test('an upload becomes a link that serves the exact bytes, whole and by range', async () => {
      const audioId = await newRecording()
      const bytes = randomBytes(200_000)
      const stored = await upload(audioId, bytes, 4200)
      assert.deepEqual(stored, {
        audioId,
        bytes: bytes.length,
        sha256: sha256(bytes),
        contentType: 'audio/wav',
      })
      const data = await queried(audioId)
      assert.equal(data.recordDuration, 4200)
      const link = data.denoiseUrl as string
      assert.match(link, new RegExp(`^${platform.partnerUrl}/media/v1/`))

      const whole = await fetch(link)
      assert.equal(whole.status, 200)
      assert.deepEqual(Buffer.from(await whole.arrayBuffer()), bytes)
      assert.equal(whole.headers.get('content-type'), 'audio/wav')
      assert.equal(whole.headers.get('content-length'), String(bytes.length))
      assert.equal(whole.headers.get('accept-ranges'), 'bytes')
      assert.equal(whole.headers.get('etag'), `"${sha256(bytes)}"`)
      assert.equal(
        whole.headers.get('repr-digest'),
        `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`,
      )
      assert.equal(whole.headers.get('cache-control'), 'private')
      assert.match(whole.headers.get('content-disposition') ?? '', /^attachment; filename=".+\.wav"$/)

      const listed = await adminClientOf(platform).listRecordings(partner.enterpriseId, { audioId })
      assert.equal(listed.total, 1)
      const operatorLink = listed.items[0]?.data.denoiseUrl as string
      assert.deepEqual(
        Buffer.from(await (await fetch(operatorLink)).arrayBuffer()),
        bytes,
        'the admin list links too',
      )

      const part = await fetch(link, { headers: { range: 'bytes=100000-' } })
      assert.equal(part.status, 206)
      assert.equal(part.headers.get('content-range'), `bytes 100000-199999/${bytes.length}`)
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(100_000))

      const past = await fetch(link, { headers: { range: 'bytes=300000-' } })
      assert.equal(past.status, 416)
      assert.equal(past.headers.get('content-range'), `bytes */${bytes.length}`)

      const etag = whole.headers.get('etag') as string
      assert.equal((await fetch(link, { headers: { 'if-none-match': etag } })).status, 304)
      const stale = await fetch(link, { headers: { range: 'bytes=0-9', 'if-range': '"other"' } })
      assert.equal(stale.status, 200, 'If-Range not matching: the whole file')
      await stale.arrayBuffer()

      const head = await fetch(link, { method: 'HEAD' })
      assert.equal(head.status, 200)
      assert.equal(head.headers.get('content-length'), String(bytes.length))
    })

    test('a tampered link is 4030, an expired one 4030 saying to query again; a fresh query works', async () => {
      const audioId = await newRecording()
      await upload(audioId, randomBytes(1000))
      const link = (await queried(audioId)).denoiseUrl as string
      const tampered = `${link.slice(0, -2)}${link.endsWith('AA') ? 'BB' : 'AA'}`
      const refused = await fetch(tampered)
      assert.equal(refused.status, 403)
      assert.equal(((await refused.json()) as { code: number }).code, 4030)

      now += (platform.context.config.mediaUrlTtlSeconds + 1) * 1000
      const expired = await fetch(link)
      assert.equal(expired.status, 403)
      const body = (await expired.json()) as { code: number; msg: string }
      assert.equal(body.code, 4030)
      assert.match(body.msg, /expired .*query the recording again/)
      const fresh = await fetch((await queried(audioId)).denoiseUrl as string)
      assert.equal(fresh.status, 200)
      await fresh.arrayBuffer()
    })

    test('a replacement is an update: pushed, in the feed, the old link 4040 and the old file removed', async () => {
      const audioId = await newRecording({ transcript: transcript() })
      await upload(audioId, randomBytes(5000))
      const first = await queried(audioId)
      assert.equal(typeof first.transcriptId, 'number', 'set A')
      assert.match(first.denoiseUrl as string, /\/media\/v1\//, 'set A carries the audio part')
      const oldKey = await keyOf(audioId)
      await (await fetch(first.denoiseUrl as string)).arrayBuffer()

      const replacement = randomBytes(6000)
      await upload(audioId, replacement)
      // Once the replacement commits, on every instance (the look-ups it remembered are forgotten).
      const old = await eventually(
        async () => {
          const answer = await fetch(first.denoiseUrl as string)
          if (answer.status === 404) return answer
          await answer.arrayBuffer()
          return undefined
        },
        10_000,
        'the old link refused',
      )
      assert.equal(((await old.json()) as { code: number }).code, 4040)
      const again = await fetch((await queried(audioId)).denoiseUrl as string)
      assert.deepEqual(Buffer.from(await again.arrayBuffer()), replacement)

      const pushes = await eventually(
        async () => {
          const mine = receiver.received.filter((push) => push.event.audioId === audioId)
          return mine.some((push) => push.event.eventType === PushEventType.UPDATED) && mine
        },
        20_000,
        'the recording.updated push',
      )
      const updated = pushes.find((push) => push.event.eventType === PushEventType.UPDATED)
      assert.ok(updated)
      const pushedLink = (updated.event.data as { denoiseUrl: string }).denoiseUrl
      const fetched = await fetch(pushedLink)
      assert.deepEqual(
        Buffer.from(await fetched.arrayBuffer()),
        replacement,
        'the push carries a working link',
      )

      await everyChangeNumbered(platform, partner.enterpriseId)
      const feed = await partner.call(CHANGES, { size: 100 })
      const changes = (
        feed.plaintext as { items: { audioId: string; change: string; data?: { denoiseUrl?: string } }[] }
      ).items.filter((item) => item.audioId === audioId)
      assert.ok(changes.some((item) => item.change === 'updated'))
      assert.match(changes.at(-1)?.data?.denoiseUrl ?? '', /\/media\/v1\//)
      await eventually(
        async () => (await platform.context.media.store.read(oldKey)) === undefined,
        10_000,
        'the old file removed',
      )
    })

    test('a deletion removes the file once it commits; its link then answers 4040', async () => {
      const audioId = await newRecording()
      await upload(audioId, randomBytes(3000))
      const link = (await queried(audioId)).denoiseUrl as string
      const key = await keyOf(audioId)
      await adminClientOf(platform).call('deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId },
      })
      const refused = await fetch(link)
      assert.equal(refused.status, 404)
      await refused.arrayBuffer()
      await eventually(
        async () => (await platform.context.media.store.read(key)) === undefined,
        10_000,
        'the file removed',
      )
    })

    test('an upload over the limit is 4130 and changes nothing; to a missing recording 4040', async () => {
      const audioId = await newRecording()
      await assert.rejects(
        upload(audioId, randomBytes(1_500_000)),
        (error: { code?: number }) => error.code === 4130,
      )
      assert.equal(await keyOf(audioId).catch(() => undefined), undefined)
      assert.equal((await queried(audioId)).denoiseUrl, 'https://cdn.example/a.mp3')
      await assert.rejects(
        upload('no-such-recording', randomBytes(10)),
        (error: { code?: number }) => error.code === 4040,
      )
      await assert.rejects(
        adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, Buffer.from('x'), {
          contentType: 'text/plain',
        }),
        (error: { code?: number }) => error.code === 4150,
      )
    })

    test('an upload cut half-way leaves no file and no change', async () => {
      const audioId = await newRecording()
      const files = await storedFiles()
      await cutUpload(audioId, 100_000, 40_000)
      await eventually(async () => (await unfinished()).length === 0, 10_000, 'the partial file removed')
      assert.equal(await storedFiles(), files)
      assert.equal((await queried(audioId)).denoiseUrl, 'https://cdn.example/a.mp3')
      assert.deepEqual(
        await platform.context.db.query('SELECT 1 FROM recording_audio WHERE audio_id = $1', [audioId]),
        [],
      )
    })

    test('rotating the link key keeps given links working, unless the others are retired', async () => {
      const audioId = await newRecording()
      await upload(audioId, randomBytes(100))
      const before = (await queried(audioId)).denoiseUrl as string
      const client = adminClientOf(platform)
      const rotated = await client.rotateLinkKey()
      assert.equal(rotated.retiredOthers, false)
      const after = (await queried(audioId)).denoiseUrl as string
      assert.notEqual(after, before)
      for (const link of [before, after]) assert.equal((await fetch(link)).status, 200, link)
      await client.rotateLinkKey(true)
      const retired = await fetch(after)
      assert.equal(retired.status, 403)
      assert.equal(((await retired.json()) as { code: number }).code, 4030)
      assert.equal((await fetch((await queried(audioId)).denoiseUrl as string)).status, 200)
    })

    test('the sweep removes files no recording names and no upload claims, and keeps the others', async () => {
      const audioId = await newRecording()
      await upload(audioId, randomBytes(100))
      const named = await keyOf(audioId)
      const { db, config } = platform.context
      const store = platform.context.media.store
      const orphan = `${partner.enterpriseId}/orphan${counter}`
      await store.put(orphan, Readable.from([randomBytes(10)]), { maxBytes: 100, contentType: 'audio/wav' })
      const claimed = {
        key: `${partner.enterpriseId}/claimed${counter}`,
        enterpriseId: partner.enterpriseId,
        audioId,
      }
      const options = { maxBytes: 100, contentType: 'audio/wav' }
      await storeClaimed(db, store, claimed, Readable.from([randomBytes(10)]), options)
      assert.ok((await sweepOrphanedMedia(db, store, Date.now(), config.mediaUploadGraceSeconds)) >= 1)
      assert.equal(await store.read(orphan), undefined)
      assert.ok(await store.read(named), 'a file a recording names stays')
      assert.ok(await store.read(claimed.key), 'a file an upload claims may be about to be named: it stays')
    })

    test('an operator cannot give a stored-audio reference as denoiseUrl', async () => {
      const audioId = await newRecording()
      await assert.rejects(
        adminClientOf(platform).call('updateRecording', {
          params: { enterpriseId: partner.enterpriseId, audioId },
          body: { denoiseUrl: `earshot-media:${'0'.repeat(64)}` },
        }),
        (error: { code?: number }) => error.code === 4001,
      )
    })

    async function keyOf(audioId: string): Promise<string> {
      const [row] = await platform.context.db.query<{ store_key: string }>(
        'SELECT store_key FROM recording_audio WHERE audio_id = $1',
        [audioId],
      )
      if (!row) throw new Error(`${audioId} has no stored audio`)
      return row.store_key
    }

    async function storedFiles(): Promise<number> {
      let n = 0
      for await (const _ of platform.context.media.store.list()) n++
      return n
    }

    /** The directory store's unfinished uploads. */
    async function unfinished(): Promise<string[]> {
      const root = platform.context.media.store.description.replace(/^directory /, '')
      return readdir(join(root, '.partial')).catch(() => [])
    }

    /** Sends `sent` of `declared` bytes and, once the store writes them, cuts the connection. */
    function cutUpload(audioId: string, declared: number, sent: number): Promise<void> {
      const url = new URL(
        `${platform.adminUrl}/admin/v1/enterprises/${partner.enterpriseId}/recordings/${audioId}/audio`,
      )
      return new Promise((resolve) => {
        const req = httpRequest(url, {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${platform.adminToken}`,
            'content-type': 'audio/wav',
            'content-length': String(declared),
          },
        })
        req.on('error', () => resolve())
        req.on('close', () => resolve())
        req.write(randomBytes(sent), async () => {
          await eventually(async () => (await unfinished()).length > 0, 10_000, 'the upload being written')
          req.destroy()
        })
      })
    }
  })
}

function transcript() {
  return {
    transcriptId: 7,
    transcriptText: 'hello',
    sentences: [{ text: 'hello', beginTime: 0, endTime: 500 }],
    durationMs: 500,
    wordsCount: 1,
  }
}
