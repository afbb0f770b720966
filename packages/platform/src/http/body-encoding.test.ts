import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { gzipSync } from 'node:zlib'
import { seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, expectCode, type Reply, type TestPartner } from '@earshot/test-kit/calls'

/**
 * Issue 10, row 8: a compressed body (Content-Encoding other than identity, whether the body really
 * is compressed or not) or one declared in a charset other than UTF-8 was read as if it were plain
 * UTF-8. Both are 4150, on the partner API and on the admin API.
 */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'

async function post(url: string, body: string | Uint8Array, headers: Record<string, string>): Promise<Reply> {
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : new Uint8Array(body),
  })
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Reply['body'],
  }
}

for (const backend of testBackends) {
  describe(`Content-Encoding and charset (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let adminAuth: { authorization: string }

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      partner = await createPartner(platform)
      adminAuth = { authorization: `Bearer ${platform.adminToken}` }
    })
    after(async () => {
      await platform?.stop()
    })

    const tokenBody = () =>
      JSON.stringify({
        ...seal(partner.key, partner.keyVersion, `encoding-${Math.random()}`, {}),
        enterpriseId: partner.enterpriseId,
      })
    const token = (body: string | Uint8Array, headers: Record<string, string>) =>
      post(`${platform.partnerUrl}${TOKEN}`, body, headers)

    test('partner: a gzip body, really compressed or not, is 4150', async () => {
      const json = { 'content-type': 'application/json' }
      expectCode(await token(gzipSync(tokenBody()), { ...json, 'content-encoding': 'gzip' }), 4150)
      expectCode(await token(tokenBody(), { ...json, 'content-encoding': 'gzip' }), 4150)
      for (const encoding of ['GZIP', 'br', 'deflate', 'x-custom', 'identity, gzip']) {
        expectCode(await token(tokenBody(), { ...json, 'content-encoding': encoding }), 4150)
      }
      const accessToken = await partner.token()
      const sealed = JSON.stringify(seal(partner.key, partner.keyVersion, 'encoding-audios', {}))
      expectCode(
        await post(`${platform.partnerUrl}${AUDIOS}`, gzipSync(sealed), {
          ...json,
          'content-encoding': 'gzip',
          authorization: `Bearer ${accessToken}`,
        }),
        4150,
      )
    })

    test('partner: a charset other than UTF-8 is 4150', async () => {
      const utf16 = Buffer.from(tokenBody(), 'utf16le')
      expectCode(await token(utf16, { 'content-type': 'application/json; charset=utf-16' }), 4150)
      for (const charset of ['UTF-16LE', '"utf-16"', 'iso-8859-1', '']) {
        expectCode(await token(tokenBody(), { 'content-type': `application/json; charset=${charset}` }), 4150)
      }
    })

    test('partner: identity and UTF-8, however written, or no charset at all, are read', async () => {
      const readable: Record<string, string>[] = [
        { 'content-type': 'application/json' },
        { 'content-type': 'application/json; charset=utf-8' },
        { 'content-type': 'Application/JSON;Charset="UTF-8"' },
        { 'content-type': 'application/json', 'content-encoding': 'identity' },
        { 'content-type': 'application/json; charset=UTF-8', 'content-encoding': 'Identity' },
      ]
      for (const headers of readable) {
        expectCode(await token(tokenBody(), headers), 2000)
      }
    })

    test('admin: gzip or a charset other than UTF-8 is 4150 on JSON routes and on the import', async () => {
      const enterprises = `${platform.adminUrl}/admin/v1/enterprises`
      const body = JSON.stringify({ name: 'Encoded Co' })
      const json = { ...adminAuth, 'content-type': 'application/json' }
      expectCode(await post(enterprises, gzipSync(body), { ...json, 'content-encoding': 'gzip' }), 4150)
      expectCode(await post(enterprises, body, { ...json, 'content-encoding': 'gzip' }), 4150)
      expectCode(
        await post(enterprises, Buffer.from(body, 'utf16le'), {
          ...adminAuth,
          'content-type': 'application/json; charset=utf-16',
        }),
        4150,
      )
      const line = JSON.stringify({
        deviceUid: 'dev-encoded',
        title: 'encoded',
        recordedAt: '2026-05-01T09:00:00Z',
        denoiseUrl: 'https://cdn.example/e.mp3',
        recordDuration: 3,
      })
      const importUrl = `${platform.adminUrl}/admin/v1/enterprises/${partner.enterpriseId}/recordings/import`
      const ndjson = { ...adminAuth, 'content-type': 'application/x-ndjson' }
      expectCode(await post(importUrl, gzipSync(line), { ...ndjson, 'content-encoding': 'gzip' }), 4150)
      expectCode(
        await post(importUrl, Buffer.from(line, 'utf16le'), {
          ...adminAuth,
          'content-type': 'application/x-ndjson; charset=utf-16',
        }),
        4150,
      )

      const created = await post(enterprises, body, {
        ...json,
        'content-type': 'application/json; charset=UTF-8',
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
    })
  })
}
