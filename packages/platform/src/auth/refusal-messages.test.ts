import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { generateSecret, type JsonObject, loadKey, seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  postJson,
  postRaw,
  type Reply,
  type TestPartner,
} from '@earshot/test-kit/calls'

/**
 * What a partner reads when the platform refuses its envelope: a 4012 names everything to check (the
 * secret, the enterpriseId, the keyVersion, and how to get a new secret) in one text whatever was wrong,
 * and a body that is no envelope at all is told what an envelope is.
 */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'
const CALLBACK = '/openapi/v1/callback'

const DECRYPTION_FAILED =
  'the envelope could not be decrypted: check the secret, the enterpriseId and the keyVersion ' +
  '(the keyVersion must be that of the secret, and the key must be current); ' +
  '`earshot enterprise rotate-key` gives the enterprise a new secret and keyVersion'

const NOT_AN_ENVELOPE =
  'the body must be a sealed envelope {specVersion, alg, keyVersion, eventId, nonce, ciphertext, tag}: ' +
  "seal the request's JSON with your secret and send the envelope, not the JSON itself"
const NOT_A_TOKEN_REQUEST =
  'the body must be a sealed envelope {specVersion, alg, keyVersion, eventId, nonce, ciphertext, tag} ' +
  "with enterpriseId beside its fields: seal the request's JSON with your secret and send the envelope, " +
  'not the JSON itself'

let counter = 0
const eventId = () => `msg-test-${++counter}`

for (const backend of testBackends) {
  describe(`refusal messages of the partner API (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let token: string

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      partner = await createPartner(platform, 'Messages Co')
      token = await partner.token()
    })
    after(async () => {
      await platform?.stop()
    })

    const tokenRequest = (
      who: { key: TestPartner['key']; keyVersion: number; enterpriseId: number },
      plaintext: JsonObject = {},
    ) =>
      postJson(platform, TOKEN, {
        ...seal(who.key, who.keyVersion, eventId(), plaintext),
        enterpriseId: who.enterpriseId,
      })

    function expectDecryptionFailed(reply: Reply, what: string): void {
      expectCode(reply, 4012)
      assert.equal(reply.body.msg, DECRYPTION_FAILED, what)
    }

    test('4012 names the secret, the enterpriseId, the keyVersion and rotate-key, the same whatever failed', async () => {
      const wrongKey = { ...partner, key: loadKey(generateSecret()) }
      expectDecryptionFailed(await tokenRequest(wrongKey), 'token: wrong secret')
      expectDecryptionFailed(
        await tokenRequest({ ...partner, enterpriseId: 987_654 }),
        'token: unknown enterprise',
      )
      expectDecryptionFailed(await tokenRequest({ ...partner, keyVersion: 7 }), 'token: unknown keyVersion')
      expectDecryptionFailed(
        await postJson(platform, TOKEN, {
          ...seal(partner.key, partner.keyVersion, eventId(), {}),
          keyVersion: 2 ** 31,
          enterpriseId: partner.enterpriseId,
        }),
        'token: a keyVersion no key can have',
      )
      expectDecryptionFailed(
        await tokenRequest(partner, { enterpriseId: partner.enterpriseId + 1 }),
        'token: another enterpriseId in the plaintext',
      )
      const sealed = (who: { key: TestPartner['key']; keyVersion: number }, plaintext: JsonObject = {}) =>
        seal(who.key, who.keyVersion, eventId(), plaintext)
      expectDecryptionFailed(
        await postJson(platform, AUDIOS, sealed(wrongKey), token),
        'audios: wrong secret',
      )
      expectDecryptionFailed(
        await postJson(platform, AUDIOS, sealed({ ...partner, keyVersion: 3 }), token),
        'audios: unknown keyVersion',
      )
      expectDecryptionFailed(
        await postJson(
          platform,
          AUDIOS,
          { ...sealed(partner), enterpriseId: partner.enterpriseId + 1 },
          token,
        ),
        "audios: an enterpriseId beside the envelope not the token's",
      )
      expectDecryptionFailed(
        await postJson(platform, CALLBACK, sealed(wrongKey, { audioId: 'x' }), token),
        'callback: wrong secret',
      )

      // After a rotation, the old secret under the new keyVersion: the same text.
      const rotating = await createPartner(platform, 'Rotating Co')
      await adminCall(platform, 'rotateKey', { params: { enterpriseId: rotating.enterpriseId } })
      expectDecryptionFailed(
        await tokenRequest({ ...rotating, keyVersion: 2 }),
        'token: old secret, new keyVersion',
      )
    })

    test('JSON that is no envelope is told what an envelope is', async () => {
      for (const body of [
        '{}',
        '{"foo":1}',
        '[]',
        '[1,2]',
        '"text"',
        '42',
        'null',
        '{"deviceUid":"dev-1"}',
      ]) {
        const onAudios = await postRaw(platform, AUDIOS, body, {
          'content-type': 'application/json',
          authorization: `Bearer ${token}`,
        })
        expectCode(onAudios, 4000)
        assert.equal(onAudios.body.msg, NOT_AN_ENVELOPE, `audios: ${body}`)
        const onToken = await postRaw(platform, TOKEN, body)
        expectCode(onToken, 4000)
        assert.equal(onToken.body.msg, NOT_A_TOKEN_REQUEST, `token: ${body}`)
      }
      // The token request's own field alone is not an envelope either.
      const enterpriseOnly = await postJson(platform, TOKEN, { enterpriseId: partner.enterpriseId })
      assert.equal(enterpriseOnly.body.msg, NOT_A_TOKEN_REQUEST)
    })

    test('an envelope with one field wrong is told that field', async () => {
      const envelope = seal(partner.key, partner.keyVersion, eventId(), {})
      const cases: [JsonObject, string][] = [
        [{ ...envelope, specVersion: 2 }, 'specVersion must be the string "1"'],
        [{ ...envelope, alg: 'A128GCM' }, 'alg must be the string "A256GCM"'],
        [{ ...envelope, keyVersion: '1' }, 'keyVersion must be a positive integer'],
        [{ ...envelope, nonce: 'AAAA' }, 'nonce must decode to exactly 12 bytes'],
        [
          { ...envelope, tag: 'not base64!' },
          'tag must be canonical standard Base64 (padding required, no whitespace)',
        ],
        [{ specVersion: '1' }, 'alg must be the string "A256GCM"'],
      ]
      for (const [body, msg] of cases) {
        const reply = await postJson(platform, AUDIOS, body, token)
        expectCode(reply, 4000)
        assert.equal(reply.body.msg, msg)
      }
      const { ciphertext: _omitted, ...noCiphertext } = envelope
      const reply = await postJson(platform, TOKEN, { ...noCiphertext, enterpriseId: partner.enterpriseId })
      expectCode(reply, 4000)
      assert.equal(reply.body.msg, 'ciphertext must be a Base64 string')
    })
  })
}
