import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { syncBuiltinESMExports } from 'node:module'
import { after, before, describe, test } from 'node:test'
import { generateSecret, loadKey, seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, expectCode, postJson, type Reply, type TestPartner } from '@earshot/test-kit/calls'

/**
 * Issue 10, row 12: a token request with a wrong key answered the same 4012 for an existing and an
 * unknown enterprise, but only the existing one cost a decryption, so timing told them apart. Now an
 * unknown enterprise or keyVersion is decrypted under a decoy key: every refusal below must cost
 * exactly one AES-GCM decryption (counted on node:crypto's createDecipheriv, which the protocol
 * package's envelope opening calls) and answer the same body.
 */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'

for (const backend of testBackends) {
  describe(`4012 costs one decryption, whatever was unknown (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      partner = await createPartner(platform)
    })
    after(async () => {
      await platform?.stop()
    })

    test('wrong key, unknown enterprise, unknown keyVersion: one decryption each, one answer', async (t) => {
      const accessToken = await partner.token()
      const wrongKey = loadKey(generateSecret())
      let eventCounter = 0
      const envelope = (key: typeof wrongKey, keyVersion: number) =>
        seal(key, keyVersion, `decoy-${++eventCounter}`, {})
      const requests: Record<string, () => Promise<Reply>> = {
        'token, wrong key': () =>
          postJson(platform, TOKEN, { ...envelope(wrongKey, 1), enterpriseId: partner.enterpriseId }),
        'token, unknown enterprise': () =>
          postJson(platform, TOKEN, {
            ...envelope(partner.key, 1),
            enterpriseId: partner.enterpriseId + 1000,
          }),
        'token, unknown keyVersion': () =>
          postJson(platform, TOKEN, { ...envelope(partner.key, 2), enterpriseId: partner.enterpriseId }),
        'bearer, wrong key': () => postJson(platform, AUDIOS, envelope(wrongKey, 1), accessToken),
        'bearer, unknown keyVersion': () => postJson(platform, AUDIOS, envelope(partner.key, 7), accessToken),
      }

      const decipher = t.mock.method(crypto, 'createDecipheriv')
      syncBuiltinESMExports()
      t.after(() => {
        decipher.mock.restore()
        syncBuiltinESMExports()
      })

      const answers = new Set<string>()
      for (const [name, request] of Object.entries(requests)) {
        const before = decipher.mock.callCount()
        const reply = await request()
        expectCode(reply, 4012)
        assert.equal(decipher.mock.callCount() - before, 1, `${name}: decryptions`)
        answers.add(JSON.stringify({ ...reply.body, requestId: undefined }))
      }
      assert.equal(answers.size, 1, [...answers].join('\n'))
    })
  })
}
