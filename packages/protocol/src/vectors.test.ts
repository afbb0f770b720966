import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { open } from './envelope.js'
import {
  DecryptionFailedError,
  InvalidEnvelopeError,
  InvalidPlaintextError,
  InvalidSecretError,
} from './errors.js'
import { loadKey, SECRET_RULE } from './key.js'

// Envelope vectors made by an independent implementation, kept as test data (.ci/run checks the copy is unchanged).
const vectorsUrl = new URL('../test-data/envelope.json', import.meta.url)

interface Vector {
  name: string
  secret: string
  envelope: unknown
  plaintext?: string
  error?: 'invalid_envelope' | 'decryption_failed' | 'invalid_plaintext'
}
const vectors = JSON.parse(readFileSync(vectorsUrl, 'utf8')) as {
  valid: Vector[]
  invalid: Vector[]
  secrets: { valid: string[]; invalid: string[] }
}

const errorClasses = {
  invalid_envelope: InvalidEnvelopeError,
  decryption_failed: DecryptionFailedError,
  invalid_plaintext: InvalidPlaintextError,
}

describe('shared envelope vectors', { timeout: 30_000 }, () => {
  test('the file holds vectors of every kind', { timeout: 30_000 }, () => {
    assert.ok(vectors.valid.length > 0 && vectors.invalid.length > 0)
    assert.ok(vectors.secrets.valid.length > 0 && vectors.secrets.invalid.length > 0)
  })

  for (const vector of vectors.valid) {
    test(`valid: ${vector.name} opens to exactly its plaintext`, () => {
      const { plaintext, envelope } = open(vector.envelope, loadKey(vector.secret))
      assert.deepEqual(plaintext, JSON.parse(vector.plaintext as string))
      assert.equal(JSON.stringify(plaintext), JSON.stringify(JSON.parse(vector.plaintext as string)))
      assert.equal(envelope.eventId, (vector.envelope as { eventId: string }).eventId)
    })
  }

  for (const vector of vectors.invalid) {
    test(`invalid: ${vector.name} is refused as ${vector.error}`, () => {
      const expected = errorClasses[vector.error as keyof typeof errorClasses]
      assert.ok(expected, `unknown error class ${vector.error}`)
      assert.throws(
        () => open(vector.envelope, loadKey(vector.secret)),
        (error: unknown) => error instanceof expected && error.code === vector.error,
      )
    })
  }

  for (const secret of vectors.secrets.valid) {
    test(`secret accepted: ${JSON.stringify(secret)}`, () => {
      assert.equal(loadKey(secret).symmetricKeySize, 32)
    })
  }

  for (const secret of vectors.secrets.invalid) {
    test(`secret refused: ${JSON.stringify(secret)}`, () => {
      assert.throws(
        () => loadKey(secret),
        (error: unknown) => error instanceof InvalidSecretError && error.message.includes(SECRET_RULE),
      )
    })
  }
})
