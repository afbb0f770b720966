import type { Database } from '../storage/database.js'
import type { EnterpriseKey } from './credentials.js'

/**
 * The NOTIFY channel of credential changes; the payload is the enterprise id. A trigger on enterprises
 * and enterprise_keys sends it in the changing transaction (migration 6).
 */
export const CREDENTIALS_CHANNEL = 'earshot_credentials'

/**
 * How long an instance uses credentials it read without hearing of a change. A NOTIFY normally drops
 * them within milliseconds; this bounds the time when one is missed (the LISTEN connection
 * reconnecting), and keeps revocation's bound: a change takes effect on every instance within 1 s.
 */
export const CREDENTIALS_TTL_MS = 500

/**
 * Entries held at most, for known keys and (apart, so that a flood of made-up ids cannot push the known
 * ones out) for unknown enterprises and keyVersions; the oldest go first.
 */
export const CREDENTIALS_MAX_ENTRIES = 10_000

export interface CredentialCacheOptions {
  load(enterpriseId: number, keyVersion: number): Promise<EnterpriseKey | undefined>
  ttlMs?: number
  maxEntries?: number
  /** Monotonic milliseconds, for the TTL; injected by tests. */
  now?: () => number
}

/**
 * Credentials per (enterprise, keyVersion), negative ones included (undefined: no such enterprise).
 * Concurrent misses share one load. A load that overlaps an invalidation answers its callers but is not
 * kept, and an entry is dated from when its load began: an entry is never older than the TTL.
 */
export interface CredentialCache {
  get(enterpriseId: number, keyVersion: number): Promise<EnterpriseKey | undefined>
  /** Drops the entries of one enterprise, or all of them. */
  invalidate(enterpriseId?: number): void
  readonly size: number
}

interface Entry {
  enterpriseId: number
  value: EnterpriseKey | undefined
  loadedAt: number
}

export function credentialCache({
  load,
  ttlMs = CREDENTIALS_TTL_MS,
  maxEntries = CREDENTIALS_MAX_ENTRIES,
  now = () => performance.now(),
}: CredentialCacheOptions): CredentialCache {
  const known = new Map<string, Entry>()
  const unknown = new Map<string, Entry>()
  const loading = new Map<string, { enterpriseId: number; value: Promise<EnterpriseKey | undefined> }>()
  let generation = 0

  const keep = (id: string, entry: Entry) => {
    known.delete(id)
    unknown.delete(id)
    const entries = entry.value?.key === undefined ? unknown : known
    if (entries.size >= maxEntries) {
      const oldest = entries.keys().next().value
      if (oldest !== undefined) entries.delete(oldest)
    }
    entries.set(id, entry)
  }

  return {
    get(enterpriseId, keyVersion) {
      const id = `${enterpriseId}:${keyVersion}`
      const entry = known.get(id) ?? unknown.get(id)
      if (entry && now() - entry.loadedAt < ttlMs) return Promise.resolve(entry.value)
      const pending = loading.get(id)
      if (pending) return pending.value
      const loadedAt = now()
      const startedIn = generation
      const value = load(enterpriseId, keyVersion).then((loaded) => {
        if (generation === startedIn) keep(id, { enterpriseId, value: loaded, loadedAt })
        return loaded
      })
      const flight = { enterpriseId, value }
      loading.set(id, flight)
      const done = () => {
        if (loading.get(id) === flight) loading.delete(id)
      }
      value.then(done, done)
      return value
    },
    invalidate(enterpriseId) {
      generation++
      for (const map of [known, unknown, loading] as Map<string, { enterpriseId: number }>[]) {
        if (enterpriseId === undefined) map.clear()
        else for (const [id, { enterpriseId: owner }] of map) if (owner === enterpriseId) map.delete(id)
      }
    },
    get size() {
      return known.size + unknown.size
    },
  }
}

/** Drops an enterprise's cached credentials whenever any instance changes them; resolves to stop. */
export function listenForCredentialChanges(
  db: Database,
  cache: CredentialCache,
): Promise<() => Promise<void>> {
  return db.listen(CREDENTIALS_CHANNEL, (payload) => {
    const enterpriseId = Number(payload)
    cache.invalidate(Number.isSafeInteger(enterpriseId) && payload !== '' ? enterpriseId : undefined)
  })
}
