import { createCipheriv, createDecipheriv } from 'node:crypto'
import { decodeCanonicalBase64 } from './base64.js'
import { DecryptionFailedError, InvalidEnvelopeError, InvalidPlaintextError } from './errors.js'
import type { EnvelopeKey } from './key.js'
import { randomBytes } from './random-pool.js'

export const SPEC_VERSION = '1'
export const ALG = 'A256GCM'
export const NONCE_BYTES = 12
export const TAG_BYTES = 16
export const MAX_EVENT_ID_LENGTH = 128
/**
 * The largest keyVersion a key can have: key versions are PostgreSQL `integer`s. A larger one is
 * well-formed but unknown, so opening refuses it as decryption_failed, before any key is looked up.
 */
export const MAX_KEY_VERSION = 2 ** 31 - 1

const CIPHER = 'aes-256-gcm'

/** The encrypted envelope (without the token request's plaintext enterpriseId). */
export interface Envelope {
  specVersion: typeof SPEC_VERSION
  alg: typeof ALG
  keyVersion: number
  eventId: string
  nonce: string
  ciphertext: string
  tag: string
}

export type JsonObject = { [key: string]: unknown }

/** Finds the key for an envelope's keyVersion; undefined when none is known (→ decryption_failed). */
export type KeyResolver = (keyVersion: number) => EnvelopeKey | undefined

export interface SealOptions {
  /** Source of the nonce; node:crypto's generator (pooled, random-pool.ts) unless a test injects another. */
  randomBytes?: (size: number) => Buffer
}

export interface OpenedEnvelope<T extends JsonObject = JsonObject> {
  envelope: Envelope
  plaintext: T
}

/** Encrypts a JSON object into an envelope under a fresh random 12-byte nonce. */
export function seal(
  key: EnvelopeKey,
  keyVersion: number,
  eventId: string,
  plaintext: JsonObject,
  options: SealOptions = {},
): Envelope {
  checkKeyVersion(keyVersion)
  checkEventId(eventId)
  if (!isJsonObject(plaintext)) throw new InvalidPlaintextError('plaintext must be a JSON object')

  const nonce = (options.randomBytes ?? randomBytes)(NONCE_BYTES)
  if (nonce.length !== NONCE_BYTES) throw new RangeError(`randomBytes returned ${nonce.length} bytes`)
  const cipher = createCipheriv(CIPHER, key, nonce, { authTagLength: TAG_BYTES })
  const head = cipher.update(JSON.stringify(plaintext), 'utf8')
  const tail = cipher.final()
  const ciphertext = tail.length === 0 ? head : Buffer.concat([head, tail])
  return {
    specVersion: SPEC_VERSION,
    alg: ALG,
    keyVersion,
    eventId,
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  }
}

/**
 * Validates and decrypts an envelope. Throws InvalidEnvelopeError for a malformed envelope (checked
 * before any decryption), DecryptionFailedError when no key is known or authentication fails, and
 * InvalidPlaintextError when the authentic plaintext is not UTF-8 JSON holding an object.
 */
export function open<T extends JsonObject = JsonObject>(
  input: unknown,
  keys: EnvelopeKey | KeyResolver,
): OpenedEnvelope<T> {
  const { envelope, nonce, tag, ciphertext } = checkEnvelope(input)

  const key = typeof keys === 'function' ? keys(envelope.keyVersion) : keys
  if (!key) throw new DecryptionFailedError()

  let bytes: Buffer
  try {
    const decipher = createDecipheriv(CIPHER, key, nonce, { authTagLength: TAG_BYTES })
    decipher.setAuthTag(tag)
    const head = decipher.update(ciphertext)
    const tail = decipher.final()
    bytes = tail.length === 0 ? head : Buffer.concat([head, tail])
  } catch (cause) {
    throw new DecryptionFailedError({ cause })
  }
  return { envelope, plaintext: parsePlaintext(bytes) as T }
}

/**
 * Checks every envelope field (type, fixed value, canonical Base64, nonce and tag lengths) and returns
 * the envelope with only its own fields (unknown extra fields are ignored). A well-formed envelope
 * whose keyVersion is above MAX_KEY_VERSION is refused with DecryptionFailedError, as open() refuses
 * any unknown keyVersion, so that a caller never looks a key up for it.
 */
export function parseEnvelope(input: unknown): Envelope {
  return checkEnvelope(input).envelope
}

interface CheckedEnvelope {
  envelope: Envelope
  nonce: Buffer
  tag: Buffer
  ciphertext: Buffer
}

function checkEnvelope(input: unknown): CheckedEnvelope {
  if (!isJsonObject(input)) throw new InvalidEnvelopeError('the envelope must be a JSON object')
  const { specVersion, alg, keyVersion, eventId, nonce, ciphertext, tag } = input
  if (specVersion !== SPEC_VERSION) throw new InvalidEnvelopeError('specVersion must be the string "1"')
  if (alg !== ALG) throw new InvalidEnvelopeError('alg must be the string "A256GCM"')
  if (!Number.isInteger(keyVersion) || (keyVersion as number) < 1) {
    throw new InvalidEnvelopeError('keyVersion must be a positive integer')
  }
  checkEventId(eventId)
  const envelope: Envelope = {
    specVersion,
    alg,
    keyVersion: keyVersion as number,
    eventId,
    nonce: requireString(nonce, 'nonce'),
    ciphertext: requireString(ciphertext, 'ciphertext'),
    tag: requireString(tag, 'tag'),
  }
  const checked = {
    envelope,
    nonce: decodeField(envelope.nonce, 'nonce', NONCE_BYTES),
    tag: decodeField(envelope.tag, 'tag', TAG_BYTES),
    ciphertext: decodeField(envelope.ciphertext, 'ciphertext'),
  }
  // Only once the envelope is known to be well-formed: a malformed one is invalid_envelope whatever
  // its keyVersion.
  if (envelope.keyVersion > MAX_KEY_VERSION) throw new DecryptionFailedError()
  return checked
}

/** seal() makes only envelopes that can be opened: a keyVersion from 1 to MAX_KEY_VERSION. */
function checkKeyVersion(keyVersion: unknown): asserts keyVersion is number {
  if (
    !Number.isInteger(keyVersion) ||
    (keyVersion as number) < 1 ||
    (keyVersion as number) > MAX_KEY_VERSION
  ) {
    throw new InvalidEnvelopeError(`keyVersion must be an integer from 1 to ${MAX_KEY_VERSION}`)
  }
}

function checkEventId(eventId: unknown): asserts eventId is string {
  // Code points, not UTF-16 units, are counted; only a long string can be over the limit.
  if (
    typeof eventId !== 'string' ||
    eventId.length === 0 ||
    (eventId.length > MAX_EVENT_ID_LENGTH && [...eventId].length > MAX_EVENT_ID_LENGTH)
  ) {
    throw new InvalidEnvelopeError(
      `eventId must be a non-empty string of at most ${MAX_EVENT_ID_LENGTH} characters`,
    )
  }
}

function requireString(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new InvalidEnvelopeError(`${field} must be a Base64 string`)
  return value
}

function decodeField(text: string, field: string, expectedBytes?: number): Buffer {
  const bytes = decodeCanonicalBase64(text)
  if (!bytes) {
    throw new InvalidEnvelopeError(
      `${field} must be canonical standard Base64 (padding required, no whitespace)`,
    )
  }
  if (expectedBytes !== undefined && bytes.length !== expectedBytes) {
    throw new InvalidEnvelopeError(`${field} must decode to exactly ${expectedBytes} bytes`)
  }
  return bytes
}

/**
 * Fatal: invalid UTF-8 is refused, never replaced by U+FFFD. The BOM is kept, so that JSON.parse
 * refuses a plaintext starting with one (RFC 8259 §8.1: a sender must not add it).
 */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function parsePlaintext(bytes: Buffer): JsonObject {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw new InvalidPlaintextError('the plaintext is not valid UTF-8')
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new InvalidPlaintextError('the plaintext is not JSON')
  }
  if (!isJsonObject(value)) throw new InvalidPlaintextError('the plaintext must be a JSON object')
  return value
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
