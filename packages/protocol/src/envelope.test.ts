import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { decodeCanonicalBase64 } from './base64.js'
import { type Envelope, type JsonObject, NONCE_BYTES, open, seal } from './envelope.js'
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

describe('seal and open', () => {
  test('round-trip any JSON object', () => {
    fc.assert(
      fc.property(jsonObject, fc.integer({ min: 1, max: 2 ** 31 }), (plaintext, keyVersion) => {
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
    assert.throws(() => seal(key, 0, 'e', {}), /keyVersion must be a positive integer/)
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

describe('canonical Base64', () => {
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
