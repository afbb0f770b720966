import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { JsonObject, ResolvedRecordingFilter } from '@earshot/protocol'
import { scratchPostgresDatabase, startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, expectCode, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { createEnterprise } from '../enterprises/enterprise-store.js'
import type { Database, Queryable } from '../storage/database.js'
import { openDatabase } from '../storage/open-database.js'
import { tendDatabase } from '../storage/upkeep.js'
import { queryRecordings } from './recording-store.js'

/**
 * Issue 10: on PGlite, a tenant paging deep into 100,000 recordings must not stall the others. PGlite
 * runs in a worker thread, so while a deep page is worked out there the platform's event loop keeps
 * answering /healthz and other enterprises' queries; the page query's OFFSET walks index entries only.
 */

const RECORDINGS = 100_000
const SIZE = 10
const LAST_PAGE = RECORDINGS / SIZE
/** Deep-page requests per connection, two connections. */
const DEEP_PER_CONNECTION = 4
/**
 * /healthz answers per deep-page answer, at least. With PGlite on the event loop there is about one
 * (each deep page holds the loop for its whole run); off it, a probe takes a tiny fraction of a deep page.
 */
const HEALTHZ_PER_DEEP_PAGE = 4

/** recorded_at of seeded recording n: pairs share an instant, so the audioId tie-break is exercised too. */
const seconds = (n: number) => Math.floor(n / 2)
const audioIdOf = (n: number) => `deep-${String(n).padStart(6, '0')}`

/** Seeds RECORDINGS recordings of one enterprise in one statement (audio part only, 50 devices). */
async function seed(db: Queryable, enterpriseId: number): Promise<void> {
  await db.query(
    `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
     SELECT 'deep-' || lpad(n::text, 6, '0'), $1, 'dev-' || (n % 50), 'title ' || n,
            '2026-01-01T00:00:00Z'::timestamptz + (n / 2) * interval '1 second', 'https://cdn.example/' || n, 60
       FROM generate_series(1, $2::int) AS n`,
    [enterpriseId, RECORDINGS],
  )
}

const deepFilters: Record<string, ResolvedRecordingFilter> = {
  'the last page of all': { page: LAST_PAGE, size: SIZE },
  "the last page of a device's": { deviceUid: 'dev-7', page: RECORDINGS / 50 / SIZE, size: SIZE },
  'a deep page of a time range': {
    startTime: '2026-01-01T06:00:00Z',
    endTime: '2026-01-01T12:00:00Z',
    page: 1000,
    size: SIZE,
  },
}

/**
 * The plan of the statement queryRecordings runs for `filter` (EXPLAIN ANALYZE); asserts the page comes
 * out as it did without EXPLAIN.
 */
async function planOf(
  db: Database,
  enterpriseId: number,
  filter: ResolvedRecordingFilter,
  items = SIZE,
): Promise<string> {
  const plans: string[] = []
  const explaining: Queryable = {
    async query<Row>(sql: string, params?: readonly unknown[]) {
      const rows = await db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${sql}`,
        params,
      )
      plans.push(rows.map((row) => row['QUERY PLAN']).join('\n'))
      return db.query<Row>(sql, params)
    },
  }
  const page = await queryRecordings(explaining, enterpriseId, filter)
  assert.deepEqual(page, await queryRecordings(db, enterpriseId, filter))
  assert.equal(page.items.length, items)
  assert.equal(plans.length, 1, 'the total and the page in one statement')
  return plans[0] as string
}

/**
 * The page's keys come from an index-only scan (its OFFSET skips index entries, never rows), then the
 * page's rows are fetched by key; only the page's rows are sorted. The total reads counters and index
 * ranges: no recording is read from the table for it.
 */
function assertIndexOnly(plan: string, label: string): void {
  const page = plan.slice(plan.lastIndexOf('Limit'))
  assert.match(page, /Index Only Scan using recordings_by_(time|device) on recordings/, `${label}:\n${plan}`)
  // Rows written after the upkeep's last VACUUM have their pages read (the visibility map no longer says
  // all-visible); the upkeep vacuums again once they pass its threshold (BASE + INSERT_SCALE of the live
  // rows, upkeep.ts), which bounds them. Whether its timer ran before or after the last writes is chance.
  const scanned = Number(/Index Only Scan using[^\n]*actual rows=([\d.]+)/.exec(page)?.[1])
  const fetches = Number(/Heap Fetches: (\d+)/.exec(page)?.[1])
  assert.ok(fetches <= 1000 + 0.2 * scanned, `${label}: ${fetches} heap fetches of ${scanned} rows:\n${plan}`)
  assert.match(plan, /Index Scan using recordings_pkey on recordings r/, `${label}:\n${plan}`)
  assert.doesNotMatch(page, /Seq Scan|Bitmap Heap Scan|Sort/, `${label}:\n${plan}`)
  assert.doesNotMatch(plan, /(Seq Scan|Bitmap Heap Scan) on recordings/, `${label}:\n${plan}`)
}

describe('a deep page does not stall other tenants (pglite)', { timeout: 300_000 }, () => {
  let platform: TestPlatform
  let deep: TestPartner
  let other: TestPartner
  let deepToken: string
  let otherToken: string
  const otherIds = ['other-3', 'other-2', 'other-1']

  before(async () => {
    platform = await startTestPlatform('pglite', { rateLimitPerMinute: 0 })
    deep = await createPartner(platform, 'Deep Co')
    other = await createPartner(platform, 'Other Co')
    await seed(platform.context.db, deep.enterpriseId)
    for (const [i, audioId] of [...otherIds].reverse().entries()) {
      await ingest(platform, other.enterpriseId, {
        audioId,
        deviceUid: 'dev-1',
        title: audioId,
        recordedAt: `2026-02-0${i + 1}T00:00:00Z`,
        denoiseUrl: `https://cdn.example/${audioId}`,
        recordDuration: 5,
      })
    }
    deepToken = await deep.token()
    otherToken = await other.token()
  })

  after(async () => {
    await platform?.stop()
  })

  async function page(partner: TestPartner, token: string, filter: JsonObject) {
    const reply = await partner.call('/openapi/v1/audios', filter, token)
    expectCode(reply, 2000)
    const list = reply.plaintext as { total: number; items: { audioId: string }[] }
    return { total: list.total, ids: list.items.map((item) => item.audioId) }
  }

  test('the last page is exact: newest first by recordedAt then audioId, with the true total', async () => {
    const oldestFirst = Array.from({ length: RECORDINGS }, (_, i) => i + 1).sort(
      (a, b) => seconds(a) - seconds(b) || (audioIdOf(a) < audioIdOf(b) ? -1 : 1),
    )
    const expected = oldestFirst.slice(0, SIZE).reverse().map(audioIdOf)
    assert.deepEqual(await page(deep, deepToken, { page: LAST_PAGE, size: SIZE }), {
      total: RECORDINGS,
      ids: expected,
    })
    assert.deepEqual(await page(deep, deepToken, { page: LAST_PAGE + 1, size: SIZE }), {
      total: RECORDINGS,
      ids: [],
    })
  })

  test('pages read directly and pages read keys first list the same recordings', async () => {
    // Size 10: pages 1–4 skip fewer than 40 rows and are read directly, pages 5–10 keys first.
    for (const filter of [{}, { deviceUid: 'dev-7' }]) {
      const listing = await page(deep, deepToken, { ...filter, page: 1, size: 100 })
      const walked: string[] = []
      for (let n = 1; n <= 10; n++)
        walked.push(...(await page(deep, deepToken, { ...filter, page: n, size: 10 })).ids)
      assert.equal(listing.ids.length, 100)
      assert.deepEqual(walked, listing.ids)
    }
  })

  test('while two connections loop over the last page, /healthz and another enterprise keep answering', async () => {
    const events: ('deep' | 'healthz' | 'other')[] = []
    let deepRunning = true
    const deepLoop = async () => {
      for (let i = 0; i < DEEP_PER_CONNECTION; i++) {
        const answer = await page(deep, deepToken, { page: LAST_PAGE, size: SIZE })
        assert.equal(answer.total, RECORDINGS)
        assert.equal(answer.ids.length, SIZE)
        events.push('deep')
      }
    }
    const healthzLoop = async () => {
      while (deepRunning) {
        const response = await fetch(`${platform.partnerUrl}/healthz`)
        assert.equal(response.status, 200)
        await response.arrayBuffer()
        events.push('healthz')
      }
    }
    const otherLoop = async () => {
      while (deepRunning) {
        assert.deepEqual(await page(other, otherToken, { page: 1, size: 20 }), { total: 3, ids: otherIds })
        events.push('other')
      }
    }
    const probes = Promise.all([healthzLoop(), otherLoop()])
    probes.catch(() => {}) // awaited below, once the deep pages are done
    try {
      await Promise.all([deepLoop(), deepLoop()])
    } finally {
      deepRunning = false
      await probes
    }

    // Only what answered while the deep pages ran counts: up to the last deep-page answer.
    const during = events.slice(0, events.lastIndexOf('deep') + 1)
    const count = (kind: string) => during.filter((event) => event === kind).length
    assert.equal(count('deep'), 2 * DEEP_PER_CONNECTION)
    assert.ok(
      count('healthz') >= HEALTHZ_PER_DEEP_PAGE * count('deep'),
      `${count('healthz')} /healthz answers during ${count('deep')} deep pages: ${during.join(' ')}`,
    )
    assert.ok(count('other') >= 2, `${count('other')} answers to the other enterprise: ${during.join(' ')}`)
    // And between deep-page answers, not only before the first or after the last.
    const first = during.indexOf('deep')
    assert.ok(
      during.slice(first).filter((event) => event === 'healthz').length >= HEALTHZ_PER_DEEP_PAGE,
      `/healthz answers between deep pages: ${during.join(' ')}`,
    )
  })

  test('once the embedded upkeep has run, the page keys come from an index-only scan', async () => {
    const db = platform.context.db
    // The platform runs the same pass every 10 s: on a busy machine it may have analyzed them already.
    await tendDatabase(db)
    await db.query('SELECT pg_stat_force_next_flush()')
    const [recordings] = await db.query<{ analyzed: boolean }>(
      "SELECT analyze_count + autoanalyze_count > 0 AS analyzed FROM pg_stat_user_tables WHERE relname = 'recordings'",
    )
    assert.equal(recordings?.analyzed, true, 'recordings analyzed after 100,000 new ones')
    const again = await tendDatabase(db)
    assert.ok(
      !again.some((step) => step.table === 'recordings'),
      `nothing left for recordings: ${JSON.stringify(again)}`,
    )
    for (const [label, filter] of Object.entries(deepFilters)) {
      assertIndexOnly(await planOf(db, deep.enterpriseId, filter), label)
    }
    // Past the end, the total alone answers: the page's index is not walked.
    const past = await planOf(db, deep.enterpriseId, { page: LAST_PAGE + 1, size: SIZE }, 0)
    assert.match(past.slice(past.lastIndexOf('Limit')), /Index Only Scan[^\n]*\(never executed\)/, past)
  })
})

describe('the deep page plan on PostgreSQL', { timeout: 300_000, skip: !process.env.DATABASE_URL }, () => {
  test('the page keys come from an index-only scan', async () => {
    const scratch = await scratchPostgresDatabase()
    const db = await openDatabase({ databaseUrl: scratch.url, poolSize: 2 })
    try {
      const { enterpriseId } = await createEnterprise(db, 'Deep Co', null)
      await seed(db, enterpriseId)
      await db.query('VACUUM ANALYZE recordings') // what autovacuum (or the upkeep) does, now rather than later
      for (const [label, filter] of Object.entries(deepFilters)) {
        assertIndexOnly(await planOf(db, enterpriseId, filter), label)
      }
    } finally {
      await db.close()
      await scratch.drop()
    }
  })
})
