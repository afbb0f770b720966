import assert from 'node:assert/strict'
import { createCipheriv, randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { decodeCanonicalBase64 } from './base64.js'
import {
  type Envelope,
  type JsonObject,
  MAX_KEY_VERSION,
  NONCE_BYTES,
  open,
  parseEnvelope,
  seal,
} from './envelope.js'
import { DecryptionFailedError, InvalidEnvelopeError, InvalidPlaintextError } from './errors.js'
import { type EnvelopeKey, generateSecret, loadKey } from './key.js'

const key = loadKey(generateSecret())
const otherKey = loadKey(generateSecret())
const jsonObject = fc.dictionary(fc.string(), fc.jsonValue()) as fc.Arbitrary<JsonObject>
const base64 = (bytes: Buffer) => bytes.toString('base64')

function flipBit(text: string, bit: number): string {
  const bytes = Buffer.from(text, 'base64')
  const index = bit % (bytes.length * 8)
  bytes[index >> 3] = (bytes[index >> 3] as number) ^ (1 << (index & 7))
  return base64(bytes)
}

describe('seal and open', { timeout: 60_000 }, () => {
  test('round-trip any JSON object', () => {
    fc.assert(
      fc.property(jsonObject, fc.integer({ min: 1, max: MAX_KEY_VERSION }), (plaintext, keyVersion) => {
        const envelope = seal(key, keyVersion, 'evt-1', plaintext)
        const opened = open(JSON.parse(JSON.stringify(envelope)), (version) =>
          version === keyVersion ? key : undefined,
        )
        assert.deepEqual(opened.plaintext, JSON.parse(JSON.stringify(plaintext)))
        assert.equal(opened.envelope.keyVersion, keyVersion)
      }),
      { numRuns: 500 },
    )
  })

  test('any flipped bit in nonce, ciphertext or tag is refused as decryption_failed', () => {
    fc.assert(
      fc.property(
        jsonObject,
        fc.constantFrom('nonce', 'ciphertext', 'tag'),
        fc.nat(),
        (plaintext, field: 'nonce' | 'ciphertext' | 'tag', bit) => {
          const envelope = seal(key, 1, 'evt-1', plaintext)
          const tampered = { ...envelope, [field]: flipBit(envelope[field], bit) }
          assert.throws(() => open(tampered, key), DecryptionFailedError)
        },
      ),
      { numRuns: 500 },
    )
  })

  test('a truncated ciphertext is refused as decryption_failed and a truncated tag as invalid_envelope', () => {
    fc.assert(
      fc.property(jsonObject, fc.integer({ min: 1, max: 15 }), (plaintext, cut) => {
        const envelope = seal(key, 1, 'evt-1', plaintext)
        const ciphertext = Buffer.from(envelope.ciphertext, 'base64')
        const shorter = {
          ...envelope,
          ciphertext: base64(ciphertext.subarray(0, Math.max(0, ciphertext.length - cut))),
        }
        assert.throws(() => open(shorter, key), DecryptionFailedError)
        const shortTag = {
          ...envelope,
          tag: base64(Buffer.from(envelope.tag, 'base64').subarray(0, 16 - cut)),
        }
        assert.throws(() => open(shortTag, key), InvalidEnvelopeError)
      }),
    )
  })

  test('an envelope replayed to another key is refused as decryption_failed', () => {
    fc.assert(
      fc.property(jsonObject, fc.uint8Array({ minLength: 32, maxLength: 32 }), (plaintext, raw) => {
        const envelope = seal(key, 1, 'evt-1', plaintext)
        const attacker = loadKey(base64(Buffer.from(raw)))
        assert.throws(() => open(envelope, attacker), DecryptionFailedError)
      }),
    )
    assert.throws(() => open(seal(key, 1, 'e', {}), otherKey), DecryptionFailedError)
  })

  test('an unknown keyVersion is refused as decryption_failed, with the same message as a wrong key', () => {
    const envelope = seal(key, 7, 'evt-1', { a: 1 })
    const resolver = (version: number): EnvelopeKey | undefined => (version === 1 ? key : undefined)
    const unknown = captureError(() => open(envelope, resolver))
    const wrong = captureError(() => open(envelope, otherKey))
    assert.ok(unknown instanceof DecryptionFailedError && wrong instanceof DecryptionFailedError)
    assert.equal(unknown.message, wrong.message)
  })

  test('100,000 seals never repeat a nonce', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 100_000; i++) seen.add(seal(key, 1, 'evt', {}).nonce)
    assert.equal(seen.size, 100_000)
  })

  test('every nonce is 12 bytes from the injected source, and the tag 16 bytes', () => {
    const fixed = Buffer.alloc(NONCE_BYTES, 7)
    const envelope = seal(key, 1, 'evt', { a: 1 }, { randomBytes: () => Buffer.from(fixed) })
    assert.equal(envelope.nonce, base64(fixed))
    assert.equal(decodeCanonicalBase64(envelope.tag)?.length, 16)
    assert.deepEqual(open(envelope, key).plaintext, { a: 1 })
  })

  test('the sealed envelope has exactly the contract fields', () => {
    const envelope = seal(key, 3, 'evt-3', {})
    assert.deepEqual(Object.keys(envelope).sort(), [
      'alg',
      'ciphertext',
      'eventId',
      'keyVersion',
      'nonce',
      'specVersion',
      'tag',
    ])
    assert.equal(envelope.specVersion, '1')
    assert.equal(envelope.alg, 'A256GCM')
  })

  test('unknown extra envelope fields are ignored', () => {
    const envelope = { ...seal(key, 1, 'evt', { b: 2 }), enterpriseId: 42, extra: [1] }
    const opened = open(envelope, key)
    assert.deepEqual(opened.plaintext, { b: 2 })
    assert.equal('extra' in opened.envelope, false)
  })

  test('eventId is limited to 128 characters, counted as code points', () => {
    assert.doesNotThrow(() => open(seal(key, 1, 'x'.repeat(128), {}), key))
    assert.doesNotThrow(() => open(seal(key, 1, '🎙'.repeat(128), {}), key))
    assert.throws(() => seal(key, 1, 'x'.repeat(129), {}), InvalidEnvelopeError)
    const tooLong: Envelope = { ...seal(key, 1, 'x', {}), eventId: 'y'.repeat(129) }
    assert.throws(() => open(tooLong, key), /eventId must be a non-empty string of at most 128 characters/)
  })

  test('seal refuses what it could not send', () => {
    assert.throws(() => seal(key, 0, 'e', {}), /keyVersion must be an integer from 1 to 2147483647/)
    assert.throws(() => seal(key, 2 ** 31, 'e', {}), /keyVersion must be an integer from 1 to 2147483647/)
    assert.throws(() => seal(key, 1.5, 'e', {}), InvalidEnvelopeError)
    assert.throws(() => seal(key, 1, '', {}), InvalidEnvelopeError)
    assert.throws(() => seal(key, 1, 'e', [] as unknown as JsonObject), InvalidPlaintextError)
  })

  test('malformed envelopes are refused before decryption, naming the field', () => {
    const good = seal(key, 1, 'evt', {})
    const cases: [unknown, RegExp][] = [
      [null, /must be a JSON object/],
      [[good], /must be a JSON object/],
      [{ ...good, specVersion: 1 }, /specVersion/],
      [{ ...good, alg: 'A256gcm' }, /alg/],
      [{ ...good, keyVersion: -1 }, /keyVersion/],
      [{ ...good, nonce: 5 }, /nonce must be a Base64 string/],
      [{ ...good, ciphertext: `${good.ciphertext}\n` }, /ciphertext must be canonical/],
      [{ ...good, nonce: base64(randomBytes(16)) }, /nonce must decode to exactly 12 bytes/],
    ]
    for (const [input, message] of cases) {
      assert.throws(
        () => open(input, key),
        (error: unknown) => error instanceof InvalidEnvelopeError && message.test(error.message),
      )
    }
  })
})

describe('canonical Base64', { timeout: 60_000 }, () => {
  test('accepts exactly what standard Base64 encoding produces', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = base64(Buffer.from(bytes))
        assert.deepEqual(decodeCanonicalBase64(text), Buffer.from(bytes))
        assert.equal(decodeCanonicalBase64(`${text} `), undefined)
        assert.equal(decodeCanonicalBase64(text.replaceAll('=', '')) === undefined, text.includes('='))
      }),
    )
    assert.deepEqual(decodeCanonicalBase64('QQ=='), Buffer.from('A'))
    assert.equal(decodeCanonicalBase64('QR=='), undefined, 'non-zero unused bits')
    assert.equal(decodeCanonicalBase64('-_-_'), undefined)
  })
})

function captureError(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  assert.fail('expected an error')
}

/** Encrypts raw bytes as a plaintext, which seal() would not (it only seals JSON objects). */
function sealBytes(keyVersion: number, plaintext: Buffer): Envelope {
  const nonce = randomBytes(NONCE_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 })
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return {
    specVersion: '1',
    alg: 'A256GCM',
    keyVersion,
    eventId: 'evt-bytes',
    nonce: base64(nonce),
    ciphertext: base64(ciphertext),
    tag: base64(cipher.getAuthTag()),
  }
}

describe('keyVersion range', { timeout: 10_000 }, () => {
  test('1 to 2^31 − 1 is the range; the largest one opens', () => {
    assert.equal(MAX_KEY_VERSION, 2 ** 31 - 1)
    const envelope = seal(key, MAX_KEY_VERSION, 'evt', { a: 1 })
    const resolver = (version: number) => (version === MAX_KEY_VERSION ? key : undefined)
    assert.deepEqual(open(envelope, resolver).plaintext, { a: 1 })
    assert.equal(parseEnvelope(envelope).keyVersion, MAX_KEY_VERSION)
  })

  test('2^31 and above open like an unknown keyVersion: decryption_failed, no key looked up', () => {
    const wrong = captureError(() => open(seal(key, 1, 'e', {}), otherKey))
    for (const keyVersion of [2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 2 ** 63, 1e300]) {
      const envelope = { ...seal(key, 1, 'evt', { a: 1 }), keyVersion }
      let lookedUp = false
      const resolver = () => {
        lookedUp = true
        return key
      }
      for (const attempt of [
        () => open(envelope, resolver),
        () => open(envelope, key),
        () => parseEnvelope(envelope),
      ]) {
        const error = captureError(attempt)
        assert.ok(error instanceof DecryptionFailedError, `${keyVersion}: ${error}`)
        assert.equal(error.code, 'decryption_failed')
        assert.equal(error.responseCode, 4012)
        assert.equal(error.message, (wrong as Error).message)
      }
      assert.equal(lookedUp, false)
    }
  })

  test('a malformed envelope is invalid_envelope whatever its keyVersion', () => {
    const good = { ...seal(key, 1, 'evt', {}), keyVersion: 2 ** 31 }
    for (const broken of [
      { ...good, nonce: base64(randomBytes(8)) },
      { ...good, tag: good.tag.replace(/=+$/, '') },
      { ...good, ciphertext: `${good.ciphertext} ` },
      { ...good, eventId: '' },
      { ...good, alg: 'A128GCM' },
    ]) {
      assert.throws(() => open(broken, key), InvalidEnvelopeError)
      assert.throws(() => parseEnvelope(broken), InvalidEnvelopeError)
    }
    for (const keyVersion of [0, -1, 1.5, 2 ** 31 + 0.5, '1', null, Number.POSITIVE_INFINITY]) {
      assert.throws(() => parseEnvelope({ ...good, keyVersion }), InvalidEnvelopeError, String(keyVersion))
    }
  })
})

describe('plaintext bytes', { timeout: 10_000 }, () => {
  test('invalid UTF-8 is refused as invalid_plaintext (4000), never replaced', () => {
    const invalid: [string, number[]][] = [
      ['a lone continuation byte', [0x7b, 0x7d, 0x80]],
      ['0xff', [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]],
      ['an overlong "/"', [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]],
      ['a UTF-16 surrogate encoded', [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]],
      ['a truncated 3-byte sequence', [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]],
      ['above U+10FFFF', [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xf4, 0x90, 0x80, 0x80, 0x22, 0x7d]],
    ]
    for (const [name, bytes] of invalid) {
      const error = captureError(() => open(sealBytes(1, Buffer.from(bytes)), key))
      assert.ok(error instanceof InvalidPlaintextError, `${name}: ${error}`)
      assert.equal(error.code, 'invalid_plaintext')
      assert.equal(error.responseCode, 4000)
      assert.match(error.message, /not valid UTF-8/)
    }
  })

  test('valid multi-byte UTF-8 opens; a leading BOM is refused as not JSON', () => {
    const text = '{"title":"Réunion 会议 🎙"}'
    assert.deepEqual(open(sealBytes(1, Buffer.from(text, 'utf8')), key).plaintext, {
      title: 'Réunion 会议 🎙',
    })
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{}')])
    assert.throws(() => open(sealBytes(1, bom), key), InvalidPlaintextError)
  })
})
