import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  catalogueEntry,
  DECRYPTION_FAILED_MESSAGE,
  errorCatalogue,
  httpStatusOf,
  isResponseCode,
  ResponseCode,
} from './error-catalogue.js'
import {
  DecryptionFailedError,
  InvalidEnvelopeError,
  InvalidParameterError,
  InvalidPlaintextError,
  InvalidSecretError,
} from './errors.js'

test('the catalogue holds every code with status code / 10', { timeout: 10_000 }, () => {
  const expected: [number, string, number][] = [
    [2000, 'OK', 200],
    [4000, 'INVALID_REQUEST', 400],
    [4001, 'INVALID_PARAMETER', 400],
    [4010, 'UNAUTHORIZED', 401],
    [4011, 'TOKEN_EXPIRED', 401],
    [4012, 'DECRYPTION_FAILED', 401],
    [4030, 'FORBIDDEN', 403],
    [4031, 'FORBIDDEN_BY_ROLE', 403],
    [4040, 'NOT_FOUND', 404],
    [4080, 'REQUEST_TIMEOUT', 408],
    [4090, 'REPLAYED', 409],
    [4130, 'PAYLOAD_TOO_LARGE', 413],
    [4140, 'URI_TOO_LONG', 414],
    [4150, 'UNSUPPORTED_MEDIA_TYPE', 415],
    [4290, 'RATE_LIMITED', 429],
    [5000, 'INTERNAL_ERROR', 500],
    [5030, 'UNAVAILABLE', 503],
  ]
  assert.deepEqual(
    [...errorCatalogue.values()].map((entry) => [entry.code, entry.name, entry.httpStatus]),
    expected,
  )
  assert.equal(httpStatusOf(4011), 401)
  assert.equal(isResponseCode(4090), true)
  assert.equal(isResponseCode(4091), false)
  assert.throws(() => catalogueEntry(1234 as never), RangeError)
})

test('every protocol error carries a stable code and a catalogue response code', { timeout: 10_000 }, () => {
  const errors = [
    [new InvalidEnvelopeError('x'), 'invalid_envelope', ResponseCode.INVALID_REQUEST],
    [new DecryptionFailedError(), 'decryption_failed', ResponseCode.DECRYPTION_FAILED],
    [new InvalidPlaintextError('x'), 'invalid_plaintext', ResponseCode.INVALID_REQUEST],
    [new InvalidParameterError('size', 'x'), 'invalid_parameter', ResponseCode.INVALID_PARAMETER],
    [new InvalidSecretError('x'), 'invalid_secret', ResponseCode.INTERNAL_ERROR],
  ] as const
  for (const [error, code, responseCode] of errors) {
    assert.equal(error.code, code)
    assert.equal(error.responseCode, responseCode)
    assert.equal(error.name, error.constructor.name)
    assert.ok(errorCatalogue.has(error.responseCode))
  }
})

test('4012 says what to check, naming none of them as the one that was wrong', { timeout: 10_000 }, () => {
  const { defaultMessage } = catalogueEntry(ResponseCode.DECRYPTION_FAILED)
  assert.equal(defaultMessage, DECRYPTION_FAILED_MESSAGE)
  assert.equal(
    defaultMessage,
    'the envelope could not be decrypted: check the secret, the enterpriseId and the keyVersion ' +
      '(the keyVersion must be that of the secret, and the key must be current); ' +
      '`earshot enterprise rotate-key` gives the enterprise a new secret and keyVersion',
  )
})

test('4080: the request did not arrive in time', { timeout: 10_000 }, () => {
  const entry = catalogueEntry(ResponseCode.REQUEST_TIMEOUT)
  assert.deepEqual([entry.code, entry.httpStatus], [4080, 408])
  assert.match(entry.defaultMessage, /did not arrive within the server's time limit/)
  assert.match(entry.when, /EARSHOT_REQUEST_TIMEOUT/)
})
