import { createHash } from 'node:crypto'

/** Sessions, keys and setup links are stored only as their SHA-256: a leaked table opens nothing. */
export function digestOf(secret: string): Buffer {
  return createHash('sha256').update(secret).digest()
}

/** A fresh secret, URL-safe, with its prefix (esk_ for API keys, so that secret scanners find them). */
export function newSecret(randomBytes: (size: number) => Buffer, prefix = ''): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`
}
