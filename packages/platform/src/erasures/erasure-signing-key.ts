import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { madeOnce } from '../auth/token-signing-key.js'
import type { Queryable } from '../storage/database.js'

/** The Ed25519 key that signs erasure reports, shared by every instance on the database; made once. */
export interface ErasureSigningKey {
  privateKey: KeyObject
  /** The public key as a JWK (OKP, Ed25519), with its kid. */
  jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string; alg: 'EdDSA'; use: 'sig' }
}

export async function erasureSigningKey(db: Queryable): Promise<ErasureSigningKey> {
  const stored = await madeOnce(db, 'erasure_signing_key', () =>
    generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  )
  const privateKey = createPrivateKey({ key: Buffer.from(stored, 'base64'), format: 'der', type: 'pkcs8' })
  const { x } = createPublicKey(privateKey).export({ format: 'jwk' }) as { x: string }
  return {
    privateKey,
    jwk: { kty: 'OKP', crv: 'Ed25519', x, kid: `erasure-${x.slice(0, 16)}`, alg: 'EdDSA', use: 'sig' },
  }
}
