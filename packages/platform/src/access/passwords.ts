import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'

/*
 * Passwords are kept as scrypt hashes (memory-hard: 32 MiB and ~50 ms per try on this hardware), from
 * Node's own crypto: `scrypt$N$r$p$salt$hash`, base64url. The parameters travel with the hash, so they may
 * grow without invalidating the passwords set before.
 */
const COST = { N: 2 ** 15, r: 8, p: 1 }
const KEY_LENGTH = 32
const MIN_LENGTH = 12

export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_LENGTH) return `a password needs at least ${MIN_LENGTH} characters`
  if (password.length > 1024) return 'a password may have at most 1024 characters'
  return undefined
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const hash = await derive(password, salt, COST)
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), hash.toString('base64url')].join('$')
}

export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64url')
  const derived = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  })
  return derived.length === expected.length && timingSafeEqual(derived, expected)
}

/** What a sign-in for an unknown account spends, so that its answer takes as long as a wrong password's. */
export const DECOY_HASH = `scrypt$${COST.N}$${COST.r}$${COST.p}$AAAAAAAAAAAAAAAAAAAAAA$${'A'.repeat(43)}`

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r + 1024 * 1024 }
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  )
}
