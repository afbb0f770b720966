import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { generateSecret, loadKey } from '@earshot/protocol'
import { openPostgres } from '@earshot/support/storage'
import {
  type ScratchDatabase,
  scratchPostgresDatabase,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { adminCall, createPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import type { Database } from '../storage/database.js'
import { credentialCache, listenForCredentialChanges } from './credential-cache.js'
import { type EnterpriseKey, loadEnterpriseKey, usableKey } from './credentials.js'

/** The credentials cache: TTL, negative entries, invalidation (revocation within 1 s). */

const key = loadKey(generateSecret())
const current: EnterpriseKey = { disabled: false, requireIssuedAt: false, key, retiresAtMs: null }

/** A loader answering from `state`, counting its calls; `hold` makes the next loads wait for release(). */
function fakeLoader(state: Map<string, EnterpriseKey | undefined>) {
  let gate: Promise<void> | undefined
  let open = () => {}
  const loader = {
    calls: 0,
    load: async (enterpriseId: number, keyVersion: number) => {
      loader.calls++
      const value = state.get(`${enterpriseId}:${keyVersion}`)
      if (gate) await gate
      return value
    },
    hold() {
      gate = new Promise((resolve) => {
        open = resolve
      })
    },
    release() {
      gate = undefined
      open()
    },
  }
  return loader
}

describe('credential cache', { timeout: 10_000 }, () => {
  test('an entry is used for its TTL (injected clock), then read again', async () => {
    let now = 1000
    const loader = fakeLoader(new Map([['1:1', current]]))
    const cache = credentialCache({ load: loader.load, ttlMs: 500, now: () => now })
    assert.equal(await cache.get(1, 1), current)
    now += 499
    assert.equal(await cache.get(1, 1), current)
    assert.equal(loader.calls, 1)
    now += 1
    assert.equal(await cache.get(1, 1), current)
    assert.equal(loader.calls, 2, 'read again once the TTL has passed')
  })

  test('an entry is dated from when its load began', async () => {
    let now = 0
    const state = new Map([['1:1', current]])
    const loader = fakeLoader(state)
    const cache = credentialCache({ load: loader.load, ttlMs: 500, now: () => now })
    loader.hold()
    const pending = cache.get(1, 1)
    now = 400 // the database answers late
    loader.release()
    await pending
    now = 500
    await cache.get(1, 1)
    assert.equal(loader.calls, 2, 'the TTL counts from the start of the read, not its answer')
  })

  test('unknown enterprises and keyVersions are cached too, for the TTL', async () => {
    let now = 0
    const loader = fakeLoader(
      new Map<string, EnterpriseKey | undefined>([['1:2', { ...current, key: undefined }]]),
    )
    const cache = credentialCache({ load: loader.load, ttlMs: 500, now: () => now })
    assert.equal(await cache.get(9, 1), undefined)
    assert.equal(await cache.get(9, 1), undefined)
    assert.equal((await cache.get(1, 2))?.key, undefined)
    await cache.get(1, 2)
    assert.equal(loader.calls, 2)
    now = 500
    await cache.get(9, 1)
    assert.equal(loader.calls, 3)
  })

  test('concurrent misses share one read', async () => {
    const loader = fakeLoader(new Map([['1:1', current]]))
    const cache = credentialCache({ load: loader.load, now: () => 0 })
    loader.hold()
    const all = Promise.all([cache.get(1, 1), cache.get(1, 1), cache.get(1, 1)])
    loader.release()
    assert.deepEqual(await all, [current, current, current])
    assert.equal(loader.calls, 1)
  })

  test('invalidate drops one enterprise, or all; a read overlapping it is not kept', async () => {
    const state = new Map<string, EnterpriseKey | undefined>([
      ['1:1', current],
      ['2:1', current],
    ])
    const loader = fakeLoader(state)
    const cache = credentialCache({ load: loader.load, now: () => 0 })
    await cache.get(1, 1)
    await cache.get(2, 1)
    const disabled = { ...current, disabled: true }
    state.set('1:1', disabled)
    cache.invalidate(1)
    assert.equal(await cache.get(1, 1), disabled)
    assert.equal(await cache.get(2, 1), current, 'another enterprise keeps its entry')
    assert.equal(loader.calls, 3)

    // A read that began before a change and answers after the invalidation answers its callers (they
    // asked before the change) but is not kept, and a caller after the invalidation reads afresh.
    state.set('2:1', current)
    cache.invalidate()
    loader.hold()
    const before = cache.get(2, 1)
    state.set('2:1', disabled)
    cache.invalidate(2)
    const afterChange = cache.get(2, 1)
    loader.release()
    assert.equal(await before, current)
    assert.equal(await afterChange, disabled)
    assert.equal(await cache.get(2, 1), disabled)
    assert.equal(loader.calls, 5)
  })

  test('a failed read is not kept', async () => {
    let fail = true
    const cache = credentialCache({
      load: async () => {
        if (fail) throw new Error('database down')
        return current
      },
      now: () => 0,
    })
    await assert.rejects(cache.get(1, 1), /database down/)
    fail = false
    assert.equal(await cache.get(1, 1), current)
  })

  test('the oldest entries go past maxEntries; unknown ids never push known keys out', async () => {
    const state = new Map<string, EnterpriseKey | undefined>()
    for (const id of [1, 2, 3, 4]) state.set(`${id}:1`, current)
    const loader = fakeLoader(state)
    const cache = credentialCache({ load: loader.load, maxEntries: 3, now: () => 0 })
    for (const id of [1, 2, 3, 4]) await cache.get(id, 1)
    assert.equal(cache.size, 3)
    await cache.get(4, 1)
    await cache.get(2, 1)
    assert.equal(loader.calls, 4)
    await cache.get(1, 1)
    assert.equal(loader.calls, 5, 'the first entry was dropped')

    for (let id = 100; id < 110; id++) await cache.get(id, 1)
    await cache.get(1, 1)
    await cache.get(4, 1)
    assert.equal(loader.calls, 15, 'the known keys stayed')
    assert.equal(cache.size, 6)
  })

  test('a key is usable until its retires_at, checked against the time given on every use', () => {
    const retiring = { ...current, retiresAtMs: 10_000 }
    assert.equal(usableKey(retiring, 9_999), key)
    assert.equal(usableKey(retiring, 10_000), undefined)
    assert.equal(usableKey(current, Number.MAX_SAFE_INTEGER), key)
    assert.equal(usableKey({ ...current, key: undefined }, 0), undefined)
    assert.equal(usableKey(undefined, 0), undefined)
  })
})

for (const backend of testBackends) {
  describe(`credential changes are notified (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    /** Another connection to the same database: PostgreSQL's own pool, or the embedded database itself. */
    let other: Database
    let scratch: ScratchDatabase | undefined

    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      platform = await startTestPlatform(backend, {
        pushDispatch: false,
        ...(scratch && { databaseUrl: scratch.url }),
      })
      other = scratch ? await openPostgres({ connectionString: scratch.url, max: 1 }) : platform.context.db
    })
    after(async () => {
      if (scratch) await other?.close()
      await platform?.stop()
      await scratch?.drop()
    })

    test('every change of an enterprise or its keys drops its entries, whoever made it', async () => {
      const { db } = platform.context
      const partner = await createPartner(platform, 'Notified Co')
      const id = partner.enterpriseId
      // No TTL: only a notification can make this cache read again.
      const loads: string[] = []
      const cache = credentialCache({
        load: (enterpriseId, keyVersion) => {
          loads.push(`${enterpriseId}:${keyVersion}`)
          return loadEnterpriseKey(db, enterpriseId, keyVersion)
        },
        ttlMs: Number.POSITIVE_INFINITY,
      })
      const stop = await listenForCredentialChanges(db, cache)
      try {
        const reads = () => loads.length
        const changed = async (what: string, change: () => Promise<unknown>) => {
          await cache.get(id, 1)
          await cache.get(id, 2)
          const before = reads()
          await cache.get(id, 1)
          assert.equal(reads(), before, 'cached')
          await change()
          await eventually(
            async () => {
              await cache.get(id, 1)
              return reads() > before
            },
            10_000,
            `the cache to hear of ${what}`,
          )
        }
        await changed('a direct UPDATE of a key', () =>
          other.query('UPDATE enterprise_keys SET created_at = created_at WHERE enterprise_id = $1', [id]),
        )
        await changed('a rotation through the admin API', () =>
          adminCall(platform, 'rotateKey', { params: { enterpriseId: id } }),
        )
        assert.equal(
          (await cache.get(id, 2))?.key !== undefined,
          true,
          'keyVersion 2, unknown before, now known',
        )
        await changed('a disable through the admin API', () =>
          adminCall(platform, 'disableEnterprise', { params: { enterpriseId: id } }),
        )
        assert.equal((await cache.get(id, 1))?.disabled, true)
        // An enterprise created after its id was looked up (and cached as unknown).
        const [{ next } = { next: 0 }] = await db.query<{ next: number }>(
          'SELECT max(enterprise_id) + 1 AS next FROM enterprises',
        )
        assert.equal(await cache.get(next, 1), undefined)
        const created = await createPartner(platform, 'Late Co')
        assert.equal(created.enterpriseId, next)
        await eventually(async () => (await cache.get(next, 1)) !== undefined, 10_000, 'the new enterprise')
      } finally {
        await stop()
      }
    })
  })
}
