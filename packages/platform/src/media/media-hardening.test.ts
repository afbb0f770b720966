import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { adminClientOf } from '@earshot/test-kit/fault-kit'

/**
 * Issue 42, findings 5, 6 and 7: a zero-byte file answers 416 to any range (it answered
 * `206 bytes 0--1/0` to a suffix); an upload of another type than an allowed audio one is refused
 * naming the audio rule (it said "must be application/json", or stored `audio/x+html` as given);
 * media answers carry nosniff and a sandbox CSP.
 */

for (const backend of testBackends) {
  describe(`media answers and upload types (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let counter = 0

    before(async () => {
      platform = await startTestPlatform(backend, { mediaMaxBytes: 100_000 })
      partner = await createPartner(platform, 'Hardening')
    })
    after(async () => {
      await platform?.stop()
    })

    async function newRecording(): Promise<string> {
      return ingest(platform, partner.enterpriseId, {
        audioId: `hardening-${backend}-${++counter}`,
        deviceUid: 'dev',
        title: 'hardening',
        recordedAt: '2026-11-01T08:00:00Z',
        denoiseUrl: 'https://cdn.example/a.mp3',
        recordDuration: 1,
      })
    }

    async function linkOf(audioId: string): Promise<string> {
      const reply = await partner.call('/openapi/v1/audios', { audioId })
      const items = (reply.plaintext as { items: { data: { denoiseUrl: string } }[] }).items
      return (items[0] as { data: { denoiseUrl: string } }).data.denoiseUrl
    }

    function put(audioId: string, contentType: string, body: Buffer | string = randomBytes(100)) {
      const path = `/admin/v1/enterprises/${partner.enterpriseId}/recordings/${encodeURIComponent(audioId)}/audio`
      return fetch(`${platform.adminUrl}${path}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': contentType },
        body,
      })
    }

    test('finding 5: a zero-byte file answers 416 to any range, suffixes included', async () => {
      const audioId = await newRecording()
      await adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, Buffer.alloc(0), {
        contentType: 'audio/wav',
      })
      const link = await linkOf(audioId)
      const whole = await fetch(link)
      assert.equal(whole.status, 200)
      assert.equal(whole.headers.get('content-length'), '0')
      await whole.arrayBuffer()
      for (const range of ['bytes=-5', 'bytes=-1', 'bytes=0-', 'bytes=0-0', 'bytes=5-9']) {
        for (const method of ['GET', 'HEAD']) {
          const response = await fetch(link, { method, headers: { range } })
          await response.arrayBuffer()
          assert.equal(response.status, 416, `${method} ${range}`)
          assert.equal(response.headers.get('content-range'), 'bytes */0', `${method} ${range}`)
        }
      }
    })

    test('finding 7: media answers carry nosniff and a sandbox CSP, refusals too', async () => {
      const audioId = await newRecording()
      await adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, randomBytes(1000), {
        contentType: 'audio/mpeg',
      })
      const link = await linkOf(audioId)
      const answers = [
        await fetch(link),
        await fetch(link, { headers: { range: 'bytes=0-9' } }),
        await fetch(link, { headers: { range: 'bytes=5000-' } }),
        await fetch(link, { method: 'HEAD' }),
        await fetch(`${link.slice(0, -2)}xx`),
      ]
      for (const response of answers) {
        await response.arrayBuffer()
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff', String(response.status))
        assert.equal(response.headers.get('content-security-policy'), 'sandbox', String(response.status))
      }
      assert.deepEqual(
        answers.map((response) => response.status),
        [200, 206, 416, 200, 403],
      )
    })

    test('findings 6 and 7: only the allowed audio types are stored; other types are refused naming the rule', async () => {
      const audioId = await newRecording()
      for (const type of [
        'text/html',
        'image/svg+xml',
        'application/octet-stream',
        'audio/',
        'audio/x+html',
        'audio/x-anything',
      ]) {
        const response = await put(audioId, type)
        const body = (await response.json()) as { code: number; msg: string; requestId: string }
        assert.equal(response.status, 415, type)
        assert.equal(body.code, 4150, type)
        assert.match(body.msg, /Content-Type must be audio\/<subtype>/, type)
        assert.match(body.msg, /audio\/wav.*audio\/mpeg.*audio\/flac/, type)
        assert.doesNotMatch(body.msg, /application\/json/, type)
      }
      for (const type of ['audio/wav', 'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/ogg', 'audio/opus']) {
        const response = await put(audioId, `${type}; codecs=x`)
        assert.equal(response.status, 200, type)
        assert.equal(((await response.json()) as { contentType: string }).contentType, type)
        const served = await fetch(await linkOf(audioId))
        await served.arrayBuffer()
        assert.equal(served.headers.get('content-type'), type)
      }
    })
  })
}

describe('a configured list of audio types', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner

  before(async () => {
    platform = await startTestPlatform('pglite', { mediaAudioTypes: ['audio/wav', 'audio/x-custom'] })
    partner = await createPartner(platform, 'Custom types')
  })
  after(async () => {
    await platform?.stop()
  })

  test('is what uploads may use, and what a refusal lists', async () => {
    const audioId = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'dev',
      title: 'custom',
      recordedAt: '2026-11-01T08:00:00Z',
      denoiseUrl: 'https://cdn.example/a.mp3',
      recordDuration: 1,
    })
    const client = adminClientOf(platform)
    const stored = await client.uploadAudio(partner.enterpriseId, audioId, randomBytes(10), {
      contentType: 'audio/x-custom',
    })
    assert.equal(stored.contentType, 'audio/x-custom')
    await assert.rejects(
      client.uploadAudio(partner.enterpriseId, audioId, randomBytes(10), { contentType: 'audio/mpeg' }),
      (error: Error & { code?: number }) =>
        error.code === 4150 && /audio\/wav, audio\/x-custom/.test(error.message),
    )
  })
})
