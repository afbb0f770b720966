import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, adminRefusal, adminReply, createPartner, type TestPartner } from '@earshot/test-kit/calls'

/**
 * Issue 42, finding 7: an operator's denoiseUrl was taken whatever its scheme (`javascript:`, `data:`)
 * and partners got it as given. It must be an `https:` URL, or `http:` where
 * EARSHOT_DENOISE_URL_ALLOW_HTTP allows it: anything else is refused with 4001 naming the field, on
 * ingest, import and update alike.
 */

const REFUSED = [
  'javascript:alert(document.domain)',
  'JavaScript:alert(1)',
  'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
  'vbscript:msgbox(1)',
  'file:///etc/passwd',
  'ftp://files.example/a.mp3',
  '//cdn.example/a.mp3',
  'cdn.example/a.mp3',
  'https:a.mp3',
  ' https://cdn.example/a.mp3',
]

const recording = (audioId: string, denoiseUrl: string) => ({
  audioId,
  deviceUid: 'dev',
  title: 'scheme',
  recordedAt: '2026-11-01T08:00:00Z',
  denoiseUrl,
  recordDuration: 1,
})

async function importLines(platform: TestPlatform, enterpriseId: number, lines: object[]) {
  const response = await fetch(
    `${platform.adminUrl}/admin/v1/enterprises/${enterpriseId}/recordings/import`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
      body: lines.map((line) => JSON.stringify(line)).join('\n'),
    },
  )
  return { status: response.status, text: await response.text() }
}

for (const backend of testBackends) {
  describe(`an operator's denoiseUrl (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner

    before(async () => {
      platform = await startTestPlatform(backend)
      partner = await createPartner(platform, 'Schemes')
    })
    after(async () => {
      await platform?.stop()
    })

    test('only https: is taken, on ingest, update and import; anything else is 4001 naming denoiseUrl', async () => {
      const params = { enterpriseId: partner.enterpriseId }
      const ok = await adminReply(platform, 'ingestRecording', {
        params,
        body: recording('scheme-ok', 'https://cdn.example/a.mp3'),
      })
      assert.equal(ok.status, 201)
      for (const [index, url] of [...REFUSED, 'http://cdn.example/a.mp3'].entries()) {
        const ingested = await adminRefusal(platform, 'ingestRecording', {
          params,
          body: recording(`scheme-${index}`, url),
        })
        assert.equal(ingested.status, 400, url)
        assert.equal(ingested.code, 4001, url)
        assert.match(ingested.msg, /denoiseUrl/, url)
        assert.match(ingested.msg, /https:/, url)

        const updated = await adminRefusal(platform, 'updateRecording', {
          params: { ...params, audioId: 'scheme-ok' },
          body: { denoiseUrl: url },
        })
        assert.equal(updated.code, 4001, url)
        assert.match(updated.msg, /denoiseUrl/, url)

        const imported = await importLines(platform, partner.enterpriseId, [
          recording(`scheme-import-${index}`, url),
        ])
        assert.equal(imported.status, 400, url)
        assert.match(imported.text, /"code":4001/, url)
        assert.match(imported.text, /line 1: denoiseUrl/, url)
      }
      const reply = await partner.call('/openapi/v1/audios', {})
      const items = (reply.plaintext as { items: { audioId: string; data: { denoiseUrl: string } }[] }).items
      assert.deepEqual(
        items.map((item) => item.data.denoiseUrl),
        ['https://cdn.example/a.mp3'],
      )
    })
  })
}

describe('EARSHOT_DENOISE_URL_ALLOW_HTTP', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner

  before(async () => {
    platform = await startTestPlatform('pglite', { denoiseUrlAllowHttp: true })
    partner = await createPartner(platform, 'Plain http')
  })
  after(async () => {
    await platform?.stop()
  })

  test('lets http: in, and nothing else more', async () => {
    const params = { enterpriseId: partner.enterpriseId }
    const plain = await adminReply(platform, 'ingestRecording', {
      params,
      body: recording('plain', 'http://cdn.example/a.mp3'),
    })
    assert.equal(plain.status, 201)
    await adminCall(platform, 'updateRecording', {
      params: { ...params, audioId: 'plain' },
      body: { denoiseUrl: 'http://cdn.example/b.mp3' },
    })
    const imported = await importLines(platform, partner.enterpriseId, [
      recording('plain-import', 'http://cdn.example/c.mp3'),
    ])
    assert.equal(imported.status, 200, imported.text)
    for (const url of REFUSED) {
      const refused = await adminRefusal(platform, 'ingestRecording', {
        params,
        body: recording('plain-2', url),
      })
      assert.equal(refused.code, 4001, url)
    }
  })
})
