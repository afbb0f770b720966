import { createSecretKey, randomBytes as cryptoRandomBytes, type KeyObject } from 'node:crypto'
import { decodeCanonicalBase64 } from './base64.js'
import { InvalidSecretError } from './errors.js'

export const KEY_BYTES = 32

/** The rule a secret must follow, quoted in every refusal. */
export const SECRET_RULE =
  'a secret must be 44 characters of standard Base64 (with padding) decoding to 32 bytes, or a string of exactly 32 bytes in UTF-8'

/** An AES-256 key ready for the envelope functions. */
export type EnvelopeKey = KeyObject

/**
 * Loads a secret as an AES-256 key. Accepts exactly two forms: 44-character standard
 * Base64 of 32 bytes, or a string that is exactly 32 bytes in UTF-8, used as the raw key.
 */
export function loadKey(secret: string): EnvelopeKey {
  if (typeof secret !== 'string') throw new InvalidSecretError(`${SECRET_RULE}; got ${typeof secret}`)
  if (secret.length === 44) {
    const decoded = decodeCanonicalBase64(secret)
    if (decoded?.length === KEY_BYTES) return createSecretKey(decoded)
  } else {
    const raw = Buffer.from(secret, 'utf8')
    if (raw.length === KEY_BYTES) return createSecretKey(raw)
  }
  throw new InvalidSecretError(`${SECRET_RULE}; got ${Buffer.byteLength(secret, 'utf8')} bytes`)
}

/** Generates a new secret in the form the platform hands out: Base64 of 32 random bytes. */
export function generateSecret(randomBytes: (size: number) => Buffer = cryptoRandomBytes): string {
  return randomBytes(KEY_BYTES).toString('base64')
}
