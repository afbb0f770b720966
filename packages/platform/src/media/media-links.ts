import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Database, Queryable } from '../storage/database.js'

/** What a media link grants: one file of one recording of one enterprise, until it expires. */
export interface MediaGrant {
  enterpriseId: number
  audioId: string
  /** The file's SHA-256, lower-case hex: a replaced file's links stop working. */
  sha256: string
  /** Epoch seconds. */
  expiresAt: number
}

export type LinkCheck =
  | { ok: true; grant: MediaGrant }
  | { ok: false; reason: 'expired'; grant: MediaGrant }
  | { ok: false; reason: 'invalid' }

/** How long the signing keys read from the database are trusted before being read again. */
const KEYS_FRESH_MS = 5000
const SECRET_BYTES = 32

/**
 * Signs and checks media links with keys every instance reads from the database (media_link_keys): the
 * newest signs, every one kept verifies, so rotating lets links already given work until they expire.
 */
export class MediaLinks {
  #keys = new Map<number, Buffer>()
  #readAt = Number.NEGATIVE_INFINITY
  #reading: Promise<void> | undefined

  constructor(
    private readonly db: Queryable,
    private readonly clock: () => number,
    private readonly randomBytes: (size: number) => Buffer,
  ) {}

  /** Reads the keys again if they may be stale; sign() then uses them. */
  ready(): Promise<void> {
    return this.#fresh()
  }

  /** The opaque part of `/media/v1/<opaque>` for this grant, signed with the newest key read (ready()). */
  sign(grant: Omit<MediaGrant, 'expiresAt'>, ttlSeconds: number): string {
    if (this.#keys.size === 0) throw new Error('media links: ready() was not awaited before sign()')
    const keyId = Math.max(...this.#keys.keys())
    const expiresAt = Math.floor(this.clock() / 1000) + ttlSeconds
    const body = Buffer.from(
      [keyId, grant.enterpriseId, expiresAt, grant.sha256, grant.audioId].join('|'),
    ).toString('base64url')
    return `${body}.${mac(this.#keys.get(keyId) as Buffer, body)}`
  }

  /** Whether the link is one this platform made, untampered, and not expired. */
  async check(opaque: string): Promise<LinkCheck> {
    const parsed = parse(opaque)
    if (!parsed) return { ok: false, reason: 'invalid' }
    await this.#fresh()
    if (!this.#keys.has(parsed.keyId)) await this.#read()
    const secret = this.#keys.get(parsed.keyId)
    if (!secret || !sameMac(mac(secret, parsed.body), parsed.mac)) return { ok: false, reason: 'invalid' }
    if (parsed.grant.expiresAt * 1000 <= this.clock())
      return { ok: false, reason: 'expired', grant: parsed.grant }
    return { ok: true, grant: parsed.grant }
  }

  /**
   * Adds a newer signing key (every instance signs with it within seconds); with `retireOthers`, links
   * signed before stop working. One transaction, on the database given (an operator's change: the admin
   * routes' audited one).
   */
  async rotate(retireOthers: boolean, db: Database): Promise<number> {
    const keyId = await db.transaction(async (tx) => {
      const [row] = await tx.query<{ key_id: number }>(
        `INSERT INTO media_link_keys (key_id, secret)
         SELECT coalesce(max(key_id), 0) + 1, $1 FROM media_link_keys RETURNING key_id`,
        [this.randomBytes(SECRET_BYTES)],
      )
      const added = (row as { key_id: number }).key_id
      if (retireOthers) await tx.query('DELETE FROM media_link_keys WHERE key_id <> $1', [added])
      return added
    })
    await this.#read()
    return keyId
  }

  async #fresh(): Promise<void> {
    if (this.#keys.size === 0 || this.clock() - this.#readAt > KEYS_FRESH_MS) await this.#read()
  }

  /** Reads the keys (one read at a time), making the first one when there is none. */
  #read(): Promise<void> {
    this.#reading ??= (async () => {
      try {
        await this.db.query(
          'INSERT INTO media_link_keys (key_id, secret) VALUES (1, $1) ON CONFLICT DO NOTHING',
          [this.randomBytes(SECRET_BYTES)],
        )
        const rows = await this.db.query<{ key_id: number; secret: Buffer | Uint8Array }>(
          'SELECT key_id, secret FROM media_link_keys',
        )
        this.#keys = new Map(rows.map((row) => [Number(row.key_id), Buffer.from(row.secret)]))
        this.#readAt = this.clock()
      } finally {
        this.#reading = undefined
      }
    })()
    return this.#reading
  }
}

function mac(secret: Buffer, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url')
}

function sameMac(expected: string, given: string): boolean {
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

function parse(opaque: string): { keyId: number; body: string; mac: string; grant: MediaGrant } | undefined {
  const [body, given, ...rest] = opaque.split('.')
  if (!body || !given || rest.length > 0 || !/^[A-Za-z0-9_-]+$/.test(body)) return undefined
  const fields = Buffer.from(body, 'base64url').toString('utf8').split('|')
  if (fields.length < 5) return undefined
  const [keyId, enterpriseId, expiresAt, sha256, ...audioId] = fields as [
    string,
    string,
    string,
    string,
    string,
  ]
  const numbers = [keyId, enterpriseId, expiresAt].map((field) =>
    /^\d{1,15}$/.test(field) ? Number(field) : NaN,
  )
  if (numbers.some(Number.isNaN) || !/^[0-9a-f]{64}$/.test(sha256)) return undefined
  const [key, enterprise, expiry] = numbers as [number, number, number]
  return {
    keyId: key,
    body,
    mac: given,
    grant: { enterpriseId: enterprise, expiresAt: expiry, sha256, audioId: audioId.join('|') },
  }
}
