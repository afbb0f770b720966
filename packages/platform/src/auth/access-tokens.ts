import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Access tokens are signed, not stored: `v1.<enterpriseId>.<keyVersion>.<expiresAt>.<salt>.<mac>`
 * with an HMAC-SHA256 under a signing key kept in the database, so a token works on every instance
 * sharing it and survives restarts. Revocation (enterprise disabled, keyVersion retired) is checked on
 * every use, together with the request's key, against the enterprise's credentials (credential-cache.ts:
 * read from the database, held at most CREDENTIALS_TTL_MS, dropped when any instance changes them).
 */
export interface TokenClaims {
  enterpriseId: number
  keyVersion: number
  /** Epoch seconds. */
  expiresAt: number
}

export type TokenCheck = { ok: true; claims: TokenClaims } | { ok: false; reason: 'malformed' | 'expired' }

const shape = /^v1\.(\d{1,15})\.(\d{1,10})\.(\d{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/

export interface AccessTokens {
  issue(claims: TokenClaims, salt: Buffer): string
  check(token: string, nowSeconds: number): TokenCheck
}

export function accessTokens(signingKey: Buffer): AccessTokens {
  if (signingKey.length < 32) throw new RangeError('the token signing key must be at least 32 bytes')
  const mac = (body: string) => createHmac('sha256', signingKey).update(body).digest()
  return {
    issue({ enterpriseId, keyVersion, expiresAt }, salt) {
      const body = `v1.${enterpriseId}.${keyVersion}.${expiresAt}.${salt.subarray(0, 12).toString('base64url')}`
      return `${body}.${mac(body).toString('base64url')}`
    },
    check(token, nowSeconds) {
      const match = shape.exec(token)
      if (!match) return { ok: false, reason: 'malformed' }
      // Compared as text: decoding would ignore the spare low bits of the last character, so four
      // spellings of one MAC would all be accepted.
      const given = Buffer.from(match[5] as string)
      const expected = Buffer.from(mac(token.slice(0, token.lastIndexOf('.'))).toString('base64url'))
      if (!timingSafeEqual(given, expected)) return { ok: false, reason: 'malformed' }
      const claims = {
        enterpriseId: Number(match[1]),
        keyVersion: Number(match[2]),
        expiresAt: Number(match[3]),
      }
      return claims.expiresAt <= nowSeconds ? { ok: false, reason: 'expired' } : { ok: true, claims }
    },
  }
}
