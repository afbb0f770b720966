import { randomBytes as cryptoRandomBytes } from 'node:crypto'

/** Bytes drawn from the system's generator at a time: each call to it costs as much as a few KiB. */
const POOL_BYTES = 4096

/**
 * Random bytes from node:crypto's generator, drawn a pool at a time and handed out once each: the same
 * bytes as randomBytes(size) would give, for a fraction of its cost per call when calls ask for a few
 * bytes (an envelope's nonce, a token's salt). A request for more than the pool holds is drawn directly.
 */
export function pooledRandomBytes(source: (size: number) => Buffer = cryptoRandomBytes) {
  let pool: Buffer = Buffer.alloc(0)
  let used = 0
  return (size: number): Buffer => {
    if (size > POOL_BYTES) return source(size)
    if (used + size > pool.length) {
      pool = source(POOL_BYTES)
      used = 0
    }
    used += size
    return pool.subarray(used - size, used)
  }
}

/** The process's pool (pooledRandomBytes over node:crypto). */
export const randomBytes = pooledRandomBytes()
