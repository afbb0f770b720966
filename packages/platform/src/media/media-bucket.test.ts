import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { setEnvironment } from '@earshot/test-kit/environment'
import { eventually } from '@earshot/test-kit/eventually'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { startS3Server } from '@earshot/test-kit/s3-server'

/** The platform with its audio in an S3-compatible bucket (s3rver on loopback): partners see no difference. */

let unavailable = ''
const server = await startS3Server({ onUnavailable: (reason) => (unavailable = reason) })
after(() => server?.close())

if (!server) {
  test('stored audio in a bucket', {
    skip: `no S3-compatible server for the test: s3rver did not start (${unavailable})`,
  })
} else {
  describe('stored audio in a bucket', { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let restoreEnvironment = () => {}

    before(async () => {
      // The AWS SDK's own settings, as an operator gives them.
      restoreEnvironment = setEnvironment({
        AWS_ENDPOINT_URL_S3: server.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      })
      platform = await startTestPlatform('pglite', {
        mediaS3Bucket: server.bucket,
        mediaS3ForcePathStyle: true,
      })
      partner = await createPartner(platform, 'Bucket')
    })
    after(async () => {
      await platform?.stop()
      restoreEnvironment()
    })

    test('an upload is served by its link, whole and by range, and goes with its recording', async () => {
      assert.match(platform.context.media.store.description, /^bucket s3:\/\/earshot-media/)
      const audioId = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'dev',
        title: 'in a bucket',
        recordedAt: '2026-11-01T08:00:00Z',
        denoiseUrl: 'https://cdn.example/a.mp3',
        recordDuration: 1,
      })
      const bytes = randomBytes(300_000)
      const client = adminClientOf(platform)
      const stored = await client.uploadAudio(partner.enterpriseId, audioId, bytes, {
        contentType: 'audio/mpeg',
      })
      assert.equal(stored.sha256, createHash('sha256').update(bytes).digest('hex'))
      const reply = await partner.call('/openapi/v1/audios', { audioId })
      const link = (reply.plaintext as { items: { data: { denoiseUrl: string } }[] }).items[0]?.data
        .denoiseUrl as string
      const whole = await fetch(link)
      assert.equal(whole.headers.get('content-type'), 'audio/mpeg')
      assert.deepEqual(Buffer.from(await whole.arrayBuffer()), bytes)
      const part = await fetch(link, { headers: { range: 'bytes=-1000' } })
      assert.equal(part.status, 206)
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(-1000))

      const [row] = await platform.context.db.query<{ store_key: string }>(
        'SELECT store_key FROM recording_audio WHERE audio_id = $1',
        [audioId],
      )
      await client.call('deleteRecording', { params: { enterpriseId: partner.enterpriseId, audioId } })
      await eventually(
        async () => (await platform.context.media.store.read(row?.store_key as string)) === undefined,
        10_000,
        'the object removed from the bucket',
      )
    })

    test('an empty file in the bucket answers 416 to any range, with nosniff and a sandbox CSP (issue 42)', async () => {
      const audioId = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'dev',
        title: 'empty, in a bucket',
        recordedAt: '2026-11-01T08:00:00Z',
        denoiseUrl: 'https://cdn.example/a.mp3',
        recordDuration: 1,
      })
      await adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, Buffer.alloc(0), {
        contentType: 'audio/ogg',
      })
      const reply = await partner.call('/openapi/v1/audios', { audioId })
      const link = (reply.plaintext as { items: { data: { denoiseUrl: string } }[] }).items[0]?.data
        .denoiseUrl as string
      const whole = await fetch(link)
      assert.equal(whole.status, 200)
      assert.equal((await whole.arrayBuffer()).byteLength, 0)
      assert.equal(whole.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(whole.headers.get('content-security-policy'), 'sandbox')
      for (const range of ['bytes=-5', 'bytes=0-', 'bytes=0-0']) {
        const answer = await fetch(link, { headers: { range } })
        await answer.arrayBuffer()
        assert.equal(answer.status, 416, range)
        assert.equal(answer.headers.get('content-range'), 'bytes */0', range)
      }
    })
  })
}
