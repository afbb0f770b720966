import assert from 'node:assert/strict'
import { createCipheriv, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  type Envelope,
  type EnvelopeKey,
  generateSecret,
  type JsonObject,
  loadKey,
  seal,
} from '@earshot/protocol'
import {
  durablePlatforms,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  partnerFor,
  postJson,
  postRaw,
  type Reply,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'

/** POST /openapi/v1/token and the bearer checks of /audios and /callback. */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'
const CALLBACK = '/openapi/v1/callback'

let eventCounter = 0
const nextEventId = () => `auth-test-${++eventCounter}`

/** Every response: {code, msg, requestId}, x-request-id = requestId, HTTP status = code / 10. */

/** Seals arbitrary text or bytes (which seal() refuses when they are not a JSON object). */
function sealText(key: EnvelopeKey, keyVersion: number, text: string | Buffer): Envelope {
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 })
  const plaintext = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return {
    specVersion: '1',
    alg: 'A256GCM',
    keyVersion,
    eventId: nextEventId(),
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  }
}

function tokenBody(
  partner: { key: EnvelopeKey; keyVersion: number; enterpriseId: number },
  plaintext: JsonObject = {},
): JsonObject {
  return {
    ...seal(partner.key, partner.keyVersion, nextEventId(), plaintext),
    enterpriseId: partner.enterpriseId,
  }
}

function envelopeOf(partner: { key: EnvelopeKey; keyVersion: number }, plaintext: JsonObject = {}): Envelope {
  return seal(partner.key, partner.keyVersion, nextEventId(), plaintext)
}

async function requestToken(platform: TestPlatform, body: unknown): Promise<Reply> {
  return postJson(platform, TOKEN, body)
}

/** A POST with no Content-Type at all (fetch adds text/plain to a string body). */
/** A POST of raw bytes, which need not be valid UTF-8. */
async function postBytes(platform: TestPlatform, path: string, body: Buffer, token?: string): Promise<Reply> {
  const response = await fetch(`${platform.partnerUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: new Uint8Array(body),
  })
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Reply['body'],
  }
}

/** The body as JSON text with one number written exactly as given (1e300, 9223372036854775808). */
function withNumber(body: object, field: string, number: string): string {
  const text = JSON.stringify({ ...body, [field]: 0 })
  assert.equal(text.split(`"${field}":0`).length, 2)
  return text.replace(`"${field}":0`, `"${field}":${number}`)
}

async function postWithoutContentType(platform: TestPlatform, path: string, body: string): Promise<Reply> {
  const response = await fetch(`${platform.partnerUrl}${path}`, {
    method: 'POST',
    body: new TextEncoder().encode(body),
  })
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Reply['body'],
  }
}

/**
 * Replaces the character at index i by the base64url character differing in its lowest bit only: in
 * the last character of a 32-byte MAC that bit is padding, which a decoder ignores.
 */
function changeCharAt(text: string, i: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const at = alphabet.indexOf(text.charAt(i))
  return `${text.slice(0, i)}${alphabet[at ^ 1]}${text.slice(i + 1)}`
}

for (const backend of testBackends) {
  describe(`token and bearer checks (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let token: string

    before(async () => {
      platform = await startTestPlatform(backend)
      partner = await createPartner(platform, 'Auth Co')
      token = await partner.token()
    })
    after(async () => {
      await platform?.stop()
    })

    test('2000: a token request answers with accessToken, expiresIn and tokenType', async () => {
      const reply = await requestToken(platform, tokenBody(partner))
      expectCode(reply, 2000)
      assert.equal(reply.body.msg, 'success')
      const data = reply.body.data as Record<string, unknown>
      assert.deepEqual(Object.keys(data).sort(), ['accessToken', 'expiresIn', 'tokenType'])
      assert.equal(typeof data.accessToken, 'string')
      assert.equal(data.expiresIn, 7200)
      assert.equal(data.tokenType, 'Bearer')
      // The plaintext may also name the enterprise, when it is the same one.
      expectCode(
        await requestToken(platform, tokenBody(partner, { enterpriseId: partner.enterpriseId })),
        2000,
      )
      expectCode(await partner.call(AUDIOS, {}, data.accessToken as string), 2000)
    })

    test('4000: the body is not JSON, or is a JSON array, or empty', async () => {
      expectCode(await postRaw(platform, TOKEN, '{"specVersion":'), 4000)
      expectCode(await postRaw(platform, TOKEN, '[]'), 4000)
      expectCode(await postRaw(platform, TOKEN, '"envelope"'), 4000)
      expectCode(await postRaw(platform, TOKEN, ''), 4000)
      expectCode(await postRaw(platform, AUDIOS, '{nope', bearerJson(token)), 4000)
      expectCode(await postRaw(platform, AUDIOS, '[1]', bearerJson(token)), 4000)
    })

    test('4000: the envelope is malformed', async () => {
      const good = tokenBody(partner)
      const broken: [string, JsonObject][] = [
        ['nonce of 8 bytes', { ...good, nonce: randomBytes(8).toString('base64') }],
        ['tag of 12 bytes', { ...good, tag: randomBytes(12).toString('base64') }],
        ['nonce with whitespace', { ...good, nonce: ` ${good.nonce}` }],
        ['tag without its padding', { ...good, tag: (good.tag as string).replace(/=+$/, '') }],
        ['specVersion a number', { ...good, specVersion: 1 }],
        ['alg in lower case', { ...good, alg: 'a256gcm' }],
        ['keyVersion 0', { ...good, keyVersion: 0 }],
        ['eventId empty', { ...good, eventId: '' }],
        ['eventId of 129 characters', { ...good, eventId: 'e'.repeat(129) }],
        ['ciphertext missing', { ...good, ciphertext: undefined }],
        ['enterpriseId missing', { ...good, enterpriseId: undefined }],
        ['enterpriseId a string', { ...good, enterpriseId: String(partner.enterpriseId) }],
        ['enterpriseId zero', { ...good, enterpriseId: 0 }],
      ]
      for (const [name, body] of broken) {
        const reply = await requestToken(platform, body)
        assert.equal(reply.body.code, 4000, name)
        expectCode(reply, 4000)
      }
      // The same on a request with a token.
      const audios = { ...envelopeOf(partner), nonce: randomBytes(8).toString('base64') }
      expectCode(await postJson(platform, AUDIOS, audios, token), 4000)
    })

    test('4000: an authentic plaintext that is not a JSON object', async () => {
      for (const text of ['[]', '"{}"', '42', 'not json', '']) {
        const reply = await requestToken(platform, {
          ...sealText(partner.key, 1, text),
          enterpriseId: partner.enterpriseId,
        })
        expectCode(reply, 4000)
      }
      expectCode(await postJson(platform, AUDIOS, sealText(partner.key, 1, '[1,2]'), token), 4000)
    })

    test('4001: the token plaintext names enterpriseId with the wrong type', async () => {
      for (const enterpriseId of [String(partner.enterpriseId), 1.5, null]) {
        const reply = await requestToken(platform, tokenBody(partner, { enterpriseId }))
        expectCode(reply, 4001)
        assert.match(reply.body.msg as string, /enterpriseId/)
      }
    })

    test('4001: an enterpriseId in the token plaintext beyond 2^53 − 1 is refused naming it', async () => {
      for (const number of ['9007199254740992', '9223372036854775808', '1e300']) {
        const envelope = sealText(partner.key, partner.keyVersion, `{"enterpriseId":${number}}`)
        const reply = await requestToken(platform, { ...envelope, enterpriseId: partner.enterpriseId })
        expectCode(reply, 4001)
        assert.match(reply.body.msg as string, /^enterpriseId: must be <= 9007199254740991$/)
      }
      // The largest safe integer is within the rule; it only fails to match the one beside the envelope.
      const largest = sealText(partner.key, partner.keyVersion, '{"enterpriseId":9007199254740991}')
      expectCode(await requestToken(platform, { ...largest, enterpriseId: partner.enterpriseId }), 4012)
    })

    test('4000: an enterpriseId beside the envelope beyond 2^53 − 1 is a malformed token request', async () => {
      for (const number of ['9007199254740992', '9223372036854775808', '1e300']) {
        const reply = await postRaw(platform, TOKEN, withNumber(tokenBody(partner), 'enterpriseId', number))
        expectCode(reply, 4000)
        assert.match(reply.body.msg as string, /^enterpriseId must be an integer from 1 to 9007199254740991/)
      }
      // The largest safe integer is well-formed: an unknown enterprise.
      const largest = withNumber(tokenBody(partner), 'enterpriseId', '9007199254740991')
      expectCode(await postRaw(platform, TOKEN, largest), 4012)
    })

    test('4012: a keyVersion of 2^31 or more is unknown, like 2^31 − 1, on every endpoint', async () => {
      const wrongKey = await requestToken(platform, tokenBody({ ...partner, key: loadKey(generateSecret()) }))
      expectCode(wrongKey, 4012)
      for (const number of ['2147483647', '2147483648', '4294967296', '9223372036854775808', '1e300']) {
        const refused = await postRaw(platform, TOKEN, withNumber(tokenBody(partner), 'keyVersion', number))
        expectCode(refused, 4012)
        assert.equal(refused.body.msg, wrongKey.body.msg, number)
        const audios = withNumber(envelopeOf(partner), 'keyVersion', number)
        expectCode(await postRaw(platform, AUDIOS, audios, bearerJson(token)), 4012)
        const callback = withNumber(envelopeOf(partner, { audioId: 'x' }), 'keyVersion', number)
        expectCode(await postRaw(platform, CALLBACK, callback, bearerJson(token)), 4012)
      }
      // Malformed first: a bad nonce is 4000 whatever the keyVersion.
      const badNonce = { ...tokenBody(partner), nonce: randomBytes(8).toString('base64') }
      expectCode(await postRaw(platform, TOKEN, withNumber(badNonce, 'keyVersion', '2147483648')), 4000)
      // The partner's own keyVersion still works.
      expectCode(await postJson(platform, AUDIOS, envelopeOf(partner), token), 2000)
    })

    test('4000: invalid UTF-8 in the plaintext, on every endpoint', async () => {
      // {"audioId":"<0xff>"} and an overlong "/" in a key: authentic, but not UTF-8.
      const invalid = [
        Buffer.concat([Buffer.from('{"audioId":"'), Buffer.from([0xff]), Buffer.from('"}')]),
        Buffer.concat([Buffer.from('{"'), Buffer.from([0xc0, 0xaf]), Buffer.from('":1}')]),
      ]
      for (const bytes of invalid) {
        const sealed = sealText(partner.key, partner.keyVersion, bytes)
        const tokenReply = await requestToken(platform, { ...sealed, enterpriseId: partner.enterpriseId })
        expectCode(tokenReply, 4000)
        assert.match(tokenReply.body.msg as string, /not valid UTF-8/)
        for (const path of [AUDIOS, CALLBACK]) {
          const reply = await postJson(
            platform,
            path,
            sealText(partner.key, partner.keyVersion, bytes),
            token,
          )
          expectCode(reply, 4000)
          assert.match(reply.body.msg as string, /not valid UTF-8/)
        }
      }
    })

    test('4000: invalid UTF-8 bytes in the body, e.g. in the eventId, on every endpoint', async () => {
      const withEventId = (body: object, bytes: number[]) => {
        const [head, tail] = JSON.stringify({ ...body, eventId: '@' }).split('"@"') as [string, string]
        return Buffer.concat([Buffer.from(`${head}"evt-`), Buffer.from(bytes), Buffer.from(`"${tail}`)])
      }
      for (const bytes of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
        const tokenReply = await postBytes(platform, TOKEN, withEventId(tokenBody(partner), bytes))
        expectCode(tokenReply, 4000)
        assert.match(tokenReply.body.msg as string, /not valid UTF-8/)
        expectCode(await postBytes(platform, AUDIOS, withEventId(envelopeOf(partner), bytes), token), 4000)
        const callback = withEventId(envelopeOf(partner, { audioId: 'x' }), bytes)
        expectCode(await postBytes(platform, CALLBACK, callback, token), 4000)
      }
      // Valid multi-byte UTF-8 is read as before, and the eventId echoed as sent.
      const eventId = 'évènement-会议-🎙'
      const reply = await postBytes(
        platform,
        AUDIOS,
        Buffer.from(JSON.stringify({ ...envelopeOf(partner), eventId }), 'utf8'),
        token,
      )
      expectCode(reply, 2000)
      assert.equal((reply.body.data as Envelope).eventId, eventId)
      expectCode(await postBytes(platform, TOKEN, Buffer.from(JSON.stringify(tokenBody(partner)))), 2000)
    })

    test('the bearer scheme is matched in any case, before one or more spaces (RFC 9110)', async () => {
      for (const scheme of ['bearer', 'BEARER', 'Bearer ']) {
        expectCode(
          await postRaw(platform, AUDIOS, JSON.stringify(envelopeOf(partner)), bearerJson(token, scheme)),
          2000,
        )
      }
    })

    test('4010: a missing, malformed or forged bearer token', async () => {
      const body = () => envelopeOf(partner)
      expectCode(await postJson(platform, AUDIOS, body()), 4010)
      expectCode(await postJson(platform, CALLBACK, envelopeOf(partner, { audioId: 'x' })), 4010)
      expectCode(await postRaw(platform, AUDIOS, JSON.stringify(body()), bearerJson(token, 'Basic')), 4010)
      expectCode(await postRaw(platform, AUDIOS, JSON.stringify(body()), bearerJson(token, 'Bearer:')), 4010)
      expectCode(await postJson(platform, AUDIOS, body(), 'not-a-token'), 4010)
      expectCode(await postJson(platform, AUDIOS, body(), `${token}x`), 4010)
      const mac = token.lastIndexOf('.') + 1
      // One character changed in the signature: at its start, middle and end (all its bits count).
      for (const at of [mac, mac + 20, token.length - 1]) {
        expectCode(await postJson(platform, AUDIOS, body(), changeCharAt(token, at)), 4010)
      }
      // A claim changed: another enterprise id, a later expiry.
      const [, , keyVersion, expiresAt, ...rest] = token.split('.')
      const other = ['v1', String(partner.enterpriseId + 1), keyVersion, expiresAt, ...rest].join('.')
      expectCode(await postJson(platform, AUDIOS, body(), other), 4010)
      const later = ['v1', String(partner.enterpriseId), keyVersion, String(Number(expiresAt) + 1), ...rest]
      expectCode(await postJson(platform, AUDIOS, body(), later.join('.')), 4010)
      // The token still works untouched.
      expectCode(await postJson(platform, AUDIOS, body(), token), 2000)
    })

    test('4012: wrong secret, unknown enterprise, unknown keyVersion', async () => {
      const wrongKey = { ...partner, key: loadKey(generateSecret()) }
      expectCode(await requestToken(platform, tokenBody(wrongKey)), 4012)
      const unknownEnterprise = { ...partner, enterpriseId: 987_654 }
      const unknown = await requestToken(platform, tokenBody(unknownEnterprise))
      expectCode(unknown, 4012)
      const unknownVersion = await requestToken(platform, tokenBody({ ...partner, keyVersion: 7 }))
      expectCode(unknownVersion, 4012)
      // One message for all, revealing nothing.
      const wrong = await requestToken(platform, tokenBody(wrongKey))
      assert.equal(unknown.body.msg, wrong.body.msg)
      assert.equal(unknownVersion.body.msg, wrong.body.msg)
      // A plaintext enterpriseId other than the one beside the envelope.
      expectCode(
        await requestToken(platform, tokenBody(partner, { enterpriseId: partner.enterpriseId + 1 })),
        4012,
      )
      // With a token: the wrong secret, and an unknown keyVersion.
      expectCode(await postJson(platform, AUDIOS, envelopeOf(wrongKey), token), 4012)
      expectCode(await postJson(platform, AUDIOS, envelopeOf({ ...partner, keyVersion: 3 }), token), 4012)
    })

    test('4012: an enterpriseId beside the envelope that does not match the token', async () => {
      const other = await createPartner(platform, 'Other Co')
      const mismatched = { ...envelopeOf(partner), enterpriseId: other.enterpriseId }
      expectCode(await postJson(platform, AUDIOS, mismatched, token), 4012)
      expectCode(await postJson(platform, AUDIOS, { ...envelopeOf(partner), enterpriseId: 'x' }, token), 4012)
      // The matching one is accepted.
      const matching = { ...envelopeOf(partner), enterpriseId: partner.enterpriseId }
      expectCode(await postJson(platform, AUDIOS, matching, token), 2000)
    })

    test('4030: a disabled enterprise gets no token and its tokens stop working', async () => {
      const doomed = await createPartner(platform, 'Doomed Co')
      const issued = await doomed.token()
      expectCode(await doomed.call(AUDIOS, {}, issued), 2000)
      await adminCall(platform, 'disableEnterprise', { params: { enterpriseId: doomed.enterpriseId } })
      expectCode(await requestToken(platform, tokenBody(doomed)), 4030)
      expectCode(await doomed.call(AUDIOS, {}, issued), 4030)
      expectCode(await doomed.call(CALLBACK, { audioId: 'x' }, issued), 4030)
      // Other enterprises are untouched.
      expectCode(await partner.call(AUDIOS, {}, token), 2000)
    })

    test('4090: the same envelope sent twice is refused the second time', async () => {
      const envelope = envelopeOf(partner)
      expectCode(await postJson(platform, AUDIOS, envelope, token), 2000)
      expectCode(await postJson(platform, AUDIOS, envelope, token), 4090)
      // Even with another token of the same enterprise and another eventId.
      const second = await partner.token()
      expectCode(await postJson(platform, AUDIOS, { ...envelope, eventId: 'other' }, second), 4090)

      const body = tokenBody(partner)
      expectCode(await requestToken(platform, body), 2000)
      const replayed = await requestToken(platform, body)
      expectCode(replayed, 4090)
      // A fresh seal of the same plaintext is fine.
      expectCode(await requestToken(platform, tokenBody(partner)), 2000)
    })

    test('4130: a body over 64 KiB; exactly 64 KiB is still read', async () => {
      const sized = (bytes: number) => {
        const base = JSON.stringify({ ...tokenBody(partner), pad: '' })
        const text = JSON.stringify({ ...JSON.parse(base), pad: 'x'.repeat(bytes - base.length) })
        assert.equal(Buffer.byteLength(text), bytes)
        return text
      }
      expectCode(await postRaw(platform, TOKEN, sized(64 * 1024)), 2000)
      expectCode(await postRaw(platform, TOKEN, sized(64 * 1024 + 1)), 4130)
      expectCode(await postRaw(platform, AUDIOS, 'x'.repeat(200 * 1024), bearerJson(token)), 4130)
    })

    test('4150: a Content-Type other than application/json, or none', async () => {
      const body = JSON.stringify(tokenBody(partner))
      expectCode(await postRaw(platform, TOKEN, body, { 'content-type': 'text/plain' }), 4150)
      expectCode(await postRaw(platform, TOKEN, body, { 'content-type': 'application/jsonx' }), 4150)
      expectCode(await postWithoutContentType(platform, TOKEN, body), 4150)
      expectCode(
        await postRaw(platform, AUDIOS, JSON.stringify(envelopeOf(partner)), {
          'content-type': 'text/plain',
          authorization: `Bearer ${token}`,
        }),
        4150,
      )
      // A charset parameter is fine.
      expectCode(
        await postRaw(platform, TOKEN, body, { 'content-type': 'Application/JSON; charset=utf-8' }),
        2000,
      )
    })

    test('several tokens coexist: issuing one revokes none', async () => {
      const tokens = [token, await partner.token(), await partner.token(), await partner.token()]
      assert.equal(new Set(tokens).size, tokens.length)
      for (const each of tokens) expectCode(await partner.call(AUDIOS, {}, each), 2000)
    })

    test('key rotation: the old keyVersion works within the grace, the new one at once', async () => {
      const rotating = await createPartner(platform, 'Rotating Co')
      const oldToken = await rotating.token()
      const rotated = await adminCall(platform, 'rotateKey', {
        params: { enterpriseId: rotating.enterpriseId },
      })
      assert.equal(rotated.keyVersion, 2)
      const fresh = partnerFor(platform, rotated)
      const oldKeyToken = await rotating.token()
      const newKeyToken = await fresh.token()
      for (const each of [oldToken, oldKeyToken, newKeyToken]) {
        expectCode(await rotating.call(AUDIOS, {}, each), 2000)
        const reply = await fresh.call(AUDIOS, {}, each)
        expectCode(reply, 2000)
        // The response is sealed under the request's keyVersion.
        assert.equal((reply.body.data as { keyVersion: number }).keyVersion, 2)
        assert.equal(reply.plaintext?.total, 0)
      }
      // The old secret does not open under the new keyVersion, nor the new under the old.
      expectCode(await requestToken(platform, tokenBody({ ...fresh, keyVersion: 1 })), 4012)
      expectCode(await requestToken(platform, tokenBody({ ...rotating, keyVersion: 2 })), 4012)
    })

    test('a token request without a body or with a JSON null body is refused with 4000', async () => {
      expectCode(await postRaw(platform, TOKEN, 'null'), 4000)
      expectCode(await postRaw(platform, TOKEN, '{}'), 4000)
    })
  })

  describe(`token expiry with a controlled clock (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let now = Date.parse('2026-06-01T00:00:00Z')

    before(async () => {
      platform = await startTestPlatform(backend, { tokenTtlSeconds: 60 }, { clock: () => now })
    })
    after(async () => {
      await platform?.stop()
    })

    test('4011: a token is refused once its expiresIn has passed, and a new one works', async () => {
      const partner = await createPartner(platform, 'Clocked Co')
      const reply = await requestToken(platform, tokenBody(partner))
      expectCode(reply, 2000)
      const { accessToken, expiresIn } = reply.body.data as { accessToken: string; expiresIn: number }
      assert.equal(expiresIn, 60)
      now += 59_999
      expectCode(await partner.call(AUDIOS, {}, accessToken), 2000)
      now += 1
      const expired = await partner.call(AUDIOS, {}, accessToken)
      expectCode(expired, 4011)
      expectCode(await partner.call(CALLBACK, { audioId: 'x' }, accessToken), 4011)
      expectCode(await partner.call(AUDIOS, {}, await partner.token()), 2000)
    })
  })

  describe(`rate limit (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform

    before(async () => {
      platform = await startTestPlatform(backend, { rateLimitPerMinute: 3 })
    })
    after(async () => {
      await platform?.stop()
    })

    test('4290 with Retry-After once an enterprise passes its limit; others are not affected', async () => {
      const busy = await createPartner(platform, 'Busy Co')
      const calm = await createPartner(platform, 'Calm Co')
      const busyToken = await busy.token() // 1
      expectCode(await busy.call(AUDIOS, {}, busyToken), 2000) // 2
      expectCode(await busy.call(AUDIOS, {}, busyToken), 2000) // 3
      const limited = await busy.call(AUDIOS, {}, busyToken)
      expectCode(limited, 4290)
      const retryAfter = limited.headers.get('retry-after')
      assert.match(retryAfter ?? '', /^\d+$/)
      assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`)
      expectCode(await requestToken(platform, tokenBody(busy)), 4290)
      expectCode(await busy.call(CALLBACK, { audioId: 'x' }, busyToken), 4290)
      expectCode(await calm.call(AUDIOS, {}, await calm.token()), 2000)
    })
  })

  describe(`key rotation without grace (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform

    before(async () => {
      platform = await startTestPlatform(backend, { keyGraceSeconds: 0 })
    })
    after(async () => {
      await platform?.stop()
    })

    test('the old key and the tokens issued under it are refused at once', async () => {
      const partner = await createPartner(platform, 'Strict Co')
      const oldToken = await partner.token()
      expectCode(await partner.call(AUDIOS, {}, oldToken), 2000)
      const rotated = await adminCall(platform, 'rotateKey', {
        params: { enterpriseId: partner.enterpriseId },
      })
      const fresh = partnerFor(platform, rotated)
      expectCode(await requestToken(platform, tokenBody(partner)), 4012)
      expectCode(await partner.call(AUDIOS, {}, oldToken), 4010)
      // Even with an envelope under the new key, the token of the retired key is revoked.
      expectCode(await fresh.call(AUDIOS, {}, oldToken), 4010)
      const newToken = await fresh.token()
      expectCode(await fresh.call(AUDIOS, {}, newToken), 2000)
      // An envelope under the retired key is refused even with a valid token.
      expectCode(await partner.call(AUDIOS, {}, newToken), 4012)
    })
  })

  describe(`tokens outlive an instance (${backend})`, { timeout: 120_000 }, () => {
    const durable = durablePlatforms(backend)

    test('a token survives a platform restart', async () => {
      const first = await durable.start()
      const partner = await createPartner(first, 'Durable Co')
      const issued = await partner.token()
      expectCode(await partner.call(AUDIOS, {}, issued), 2000)
      const replayed = envelopeOf(partner)
      expectCode(await postJson(first, AUDIOS, replayed, issued), 2000)
      await first.stop()

      const second = await durable.start()
      const again = partnerFor(second, partner)
      expectCode(await again.call(AUDIOS, {}, issued), 2000)
      // Accepted nonces survive too.
      expectCode(await postJson(second, AUDIOS, replayed, issued), 4090)
      await second.stop()
    })

    if (backend === 'postgres') {
      test('two instances on one database: a token from one works on the other', async () => {
        const a = await durable.start()
        const b = await durable.start()
        const onA = await createPartner(a, 'Shared Co')
        const onB = partnerFor(b, onA)
        const fromA = await onA.token()
        const fromB = await onB.token()
        expectCode(await onB.call(AUDIOS, {}, fromA), 2000)
        expectCode(await onA.call(AUDIOS, {}, fromB), 2000)
        // A nonce accepted by one instance is a replay on the other.
        const envelope = envelopeOf(onA)
        expectCode(await postJson(a, AUDIOS, envelope, fromA), 2000)
        expectCode(await postJson(b, AUDIOS, envelope, fromA), 4090)
        // Disabling through one instance revokes on the other, once it has heard (revocation.test.ts).
        await adminCall(a, 'disableEnterprise', { params: { enterpriseId: onA.enterpriseId } })
        await eventually(
          async () => (await onB.call(AUDIOS, {}, fromA)).body.code === 4030,
          10_000,
          'the other instance to refuse the disabled enterprise',
        )
      })
    }
  })
}

function bearerJson(token: string, scheme = 'Bearer'): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `${scheme} ${token}` }
}
