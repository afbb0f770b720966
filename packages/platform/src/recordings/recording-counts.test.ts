import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ResolvedRecordingFilter } from '@earshot/protocol'
import { type Database, openPostgres } from '@earshot/support/storage'
import {
  type ScratchDatabase,
  scratchPostgresDatabase,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { importRecordings } from '@earshot/test-kit/fault-kit'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import fc from 'fast-check'
import { createEnterprise } from '../enterprises/enterprise-store.js'
import type { Queryable } from '../storage/database.js'
import { migrate, migrations } from '../storage/migrations.js'
import { countedTotalSql } from './recording-counts.js'
import { INSERT_BATCH, insertRecordings, type NewRecording, queryRecordings } from './recording-store.js'

/**
 * The query's total comes from counters (recording-counts.ts): it must equal count(*) for every filter,
 * whatever wrote the recordings. Windows are drawn around UTC month, day, hour and minute boundaries, a
 * microsecond either side, and written with assorted offsets.
 */

const DAY = 86_400_000_000n
const HOUR = 3_600_000_000n
const MINUTE = 60_000_000n
/** 2026-03-01T00:00:00Z in epoch microseconds: the data lies within 40 days either side, Feb and Mar whole. */
const ORIGIN = BigInt(Date.UTC(2026, 2, 1)) * 1000n
const DEVICES = ['dev-a', 'dev-b', 'dev-c']

/** Instants where an off-by-one would show: month, day, hour and minute boundaries, a microsecond either side. */
const boundaries: bigint[] = []
for (let day = -3n; day <= 4n; day++) {
  for (const hour of [0n, 1n, 12n, 23n]) {
    for (const minute of [0n, 1n, 30n, 59n]) {
      const at = ORIGIN + day * DAY + hour * HOUR + minute * MINUTE
      boundaries.push(at - 1n, at, at + 1n)
    }
  }
}
for (const month of [1, 3]) {
  const at = BigInt(Date.UTC(2026, month, 1)) * 1000n
  boundaries.push(at - 1n, at, at + 1n)
}

/** A seeded stream, so that every run stores the same recordings. */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

const floorDiv = (n: bigint, d: bigint) => (n % d < 0n ? n / d - 1n : n / d)

/** Epoch microseconds as ISO-8601 with the given offset in minutes (`Z` for 0 when z). */
function iso(micros: bigint, offsetMinutes: number, z = false): string {
  const local = micros + BigInt(offsetMinutes) * 60_000_000n
  const millis = floorDiv(local, 1000n)
  const text = new Date(Number(millis)).toISOString()
  const fraction = `${text.slice(20, 23)}${String(local - millis * 1000n).padStart(3, '0')}`
  const abs = Math.abs(offsetMinutes)
  const offset =
    z && offsetMinutes === 0
      ? 'Z'
      : `${offsetMinutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
  return `${text.slice(0, 19)}.${fraction}${offset}`
}

/** `count` recordings in the days [from, to) around ORIGIN: a third on the boundaries, the rest anywhere. */
function recordings(prefix: string, count: number, seed: number, from = -40, to = 41): NewRecording[] {
  const random = seeded(seed)
  const start = ORIGIN + BigInt(from) * DAY
  const end = ORIGIN + BigInt(to) * DAY
  const onBoundaries = boundaries.filter((at) => at >= start && at < end)
  return Array.from({ length: count }, (_, i) => {
    const at =
      i % 3 === 0
        ? (onBoundaries[Math.floor(random() * onBoundaries.length)] as bigint)
        : start +
          BigInt(Math.floor(random() * (Number((end - start) / 1000n) - 1))) * 1000n +
          BigInt(i % 1000)
    return {
      audioId: `${prefix}-${i}`,
      deviceUid: DEVICES[Math.floor(random() * DEVICES.length)] as string,
      title: `${prefix} ${i}`,
      recordedAt: iso(at, [0, 480, -330][i % 3] as number),
      denoiseUrl: `https://media.example/${prefix}/${i}.mp3`,
      recordDuration: 60,
    }
  })
}

const instant = fc.oneof(
  fc.constantFrom(...boundaries),
  fc.bigInt({ min: ORIGIN - 45n * DAY, max: ORIGIN + 45n * DAY }),
)
const written = fc
  .tuple(instant, fc.constantFrom(0, 0, 480, -330, 959, -1))
  .map(([micros, offset]) => ({ micros, text: iso(micros, offset, true) }))

/** Filters: none, deviceUid, a window (either side open or both bounded), both, an audioId. */
function filters(audioIds: readonly string[]): fc.Arbitrary<ResolvedRecordingFilter> {
  return fc
    .record(
      {
        audioId: fc.constantFrom(...audioIds, 'no-such-recording'),
        deviceUid: fc.constantFrom(...DEVICES, 'dev-unknown'),
        start: written,
        end: written,
        page: fc.integer({ min: 1, max: 40 }),
        size: fc.constantFrom(1, 7, 20, 100),
      },
      { requiredKeys: ['page', 'size'] },
    )
    .map(({ start, end, ...rest }) => {
      const [low, high] = start && end && start.micros > end.micros ? [end, start] : [start, end]
      return {
        ...rest,
        ...(low && { startTime: low.text }),
        ...(high && { endTime: high.text }),
      }
    })
}

/** The answer the counters must give: count(*) and the page, straight from recordings. */
async function reference(db: Queryable, enterpriseId: number, filter: ResolvedRecordingFilter) {
  const params: unknown[] = [enterpriseId]
  const where = ['enterprise_id = $1']
  const match = (condition: string, value: unknown) => {
    params.push(value)
    where.push(condition.replace('?', `$${params.length}`))
  }
  if (filter.audioId !== undefined) match('audio_id = ?', filter.audioId)
  if (filter.deviceUid !== undefined) match('device_uid = ?', filter.deviceUid)
  if (filter.startTime !== undefined) match('recorded_at >= ?::timestamptz', filter.startTime)
  if (filter.endTime !== undefined) match('recorded_at < ?::timestamptz', filter.endTime)
  const conditions = where.join(' AND ')
  const [counted] = await db.query<{ n: number }>(
    `SELECT count(*) AS n FROM recordings WHERE ${conditions}`,
    params,
  )
  const page = await db.query<{ audio_id: string }>(
    `SELECT audio_id FROM recordings WHERE ${conditions} ORDER BY recorded_at DESC, audio_id DESC
      LIMIT ${filter.size} OFFSET ${(filter.page - 1) * filter.size}`,
    params,
  )
  return { total: counted?.n, ids: page.map((row) => row.audio_id) }
}

async function assertExact(db: Queryable, enterpriseId: number, numRuns: number): Promise<void> {
  const ids = await db.query<{ audio_id: string }>(
    'SELECT audio_id FROM recordings WHERE enterprise_id = $1 ORDER BY audio_id LIMIT 50',
    [enterpriseId],
  )
  await fc.assert(
    fc.asyncProperty(filters(ids.map((row) => row.audio_id)), async (filter) => {
      const page = await queryRecordings(db, enterpriseId, filter)
      assert.deepEqual(
        { total: page.total, ids: page.items.map((item) => item.audioId) },
        await reference(db, enterpriseId, filter),
      )
    }),
    { numRuns },
  )
}

/** Every counter row equals the count of its recordings, and every bucket with recordings has one. */
async function assertCountersMatch(db: Queryable): Promise<void> {
  const counters = [
    { table: 'recording_day_counts', unit: 'day', key: 'enterprise_id' },
    { table: 'recording_hour_counts', unit: 'hour', key: 'enterprise_id' },
    { table: 'recording_minute_counts', unit: 'minute', key: 'enterprise_id' },
    { table: 'recording_device_day_counts', unit: 'day', key: 'enterprise_id, device_uid' },
    { table: 'recording_device_month_counts', unit: 'month', key: 'enterprise_id, device_uid' },
  ]
  for (const { table, unit, key } of counters) {
    const wrong = await db.query(
      `SELECT * FROM ${table} c
         FULL JOIN (SELECT ${key}, utc_floor('${unit}', recorded_at) AS bucket, count(*) AS actual
                      FROM recordings GROUP BY ${key}, bucket) r USING (${key}, bucket)
        WHERE coalesce(c.n, 0) <> coalesce(r.actual, 0)`,
    )
    assert.deepEqual(wrong, [], table)
  }
}

const importLines = (list: readonly NewRecording[]) => `${list.map((r) => JSON.stringify(r)).join('\n')}\n`

for (const backend of testBackends) {
  describe(`${backend}: the query's total from the counters equals count(*)`, { timeout: 600_000 }, () => {
    let platform: TestPlatform
    let db: Database
    let enterpriseId: number
    let otherId: number
    const fileA = recordings('a', 300, 1)
    const fileB = [...fileA.slice(150), ...recordings('b', 150, 2)]

    const importFile = (id: number, list: readonly NewRecording[]) =>
      importRecordings(platform, id, { lines: importLines(list), audioIds: [], events: 0 })

    before(async () => {
      platform = await startTestPlatform(backend)
      db = platform.context.db
      enterpriseId = (await createEnterprise(db, 'Counted', null)).enterpriseId
      otherId = (await createEnterprise(db, 'Other', null)).enterpriseId
      // Another enterprise's recordings at the same instants and devices: never counted in the first's.
      await db.transaction((tx) =>
        insertRecordings(tx, otherId, recordings('o', 200, 3), platform.context.recordingEvents),
      )
    })
    after(async () => {
      await platform?.stop()
    })

    test('after a JSON Lines import', async () => {
      assert.deepEqual(await importFile(enterpriseId, fileA), { imported: 300, skipped: 0 })
      await assertCountersMatch(db)
      await assertExact(db, enterpriseId, 150)
    })

    test('windows at the ends of time: year 1 east of UTC (1 BC there), year 9999 west of it (10000)', async () => {
      const endsId = (await createEnterprise(db, 'Ends', null)).enterpriseId
      const at = [
        '0001-01-01T00:00:00Z',
        '0001-01-01T00:00:30Z',
        '0001-02-01T00:00:00Z',
        '2026-03-01T00:00:00Z',
      ]
      at.push('9999-12-01T00:00:00Z', '9999-12-31T23:59:59.999999Z')
      await db.transaction((tx) =>
        insertRecordings(
          tx,
          endsId,
          at.map((recordedAt, i) => ({
            audioId: `end-${i}`,
            deviceUid: 'dev-a',
            title: recordedAt,
            recordedAt,
            denoiseUrl: `https://media.example/end/${i}.mp3`,
            recordDuration: 60,
          })),
          platform.context.recordingEvents,
        ),
      )
      const starts = [
        undefined,
        '0001-01-01T00:00:00+15:59',
        '0001-01-01T00:00:00.000001Z',
        '0001-01-31T23:59:59-15:00',
      ]
      const ends = [
        undefined,
        '9999-12-31T23:59:59.999999-15:59',
        '9999-12-31T23:59:59.999999Z',
        '0001-01-01T00:00:30Z',
        '0001-01-01T00:00:00+15:59',
      ]
      for (const startTime of starts) {
        for (const endTime of ends) {
          for (const deviceUid of [undefined, 'dev-a']) {
            const filter = { page: 1, size: 10, startTime, endTime, deviceUid }
            const page = await queryRecordings(db, endsId, filter)
            const expected = await reference(db, endsId, filter)
            assert.deepEqual({ total: page.total, ids: page.items.map((item) => item.audioId) }, expected)
          }
        }
      }
    })

    test('after the import is run again, and a file half of which is stored', async () => {
      assert.deepEqual(await importFile(enterpriseId, fileA), { imported: 0, skipped: 300 })
      assert.deepEqual(await importFile(enterpriseId, fileB), { imported: 150, skipped: 150 })
      await assertCountersMatch(db)
      await assertExact(db, enterpriseId, 150)
    })

    test('after an INSERT … ON CONFLICT DO NOTHING, run twice', async () => {
      const insert = () =>
        db.query(
          `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
           SELECT 'raw-' || n, $1, 'dev-' || substr('abc', n % 3 + 1, 1), 'raw',
                  '2026-03-01T00:00:00Z'::timestamptz + (n - 40) * interval '1 hour' + n * interval '1 microsecond',
                  'https://media.example/raw', 1
             FROM generate_series(1, 80) AS n
           ON CONFLICT (audio_id) DO NOTHING`,
          [enterpriseId],
        )
      await insert()
      await insert()
      await assertCountersMatch(db)
      await assertExact(db, enterpriseId, 100)
    })

    test('after recordings are moved to another device and time, and deleted', async () => {
      await db.query(
        `UPDATE recordings SET device_uid = 'dev-c', recorded_at = recorded_at + interval '59 minutes 1 microsecond'
          WHERE enterprise_id = $1 AND audio_id LIKE 'a-1%'`,
        [enterpriseId],
      )
      await db.transaction(async (tx) => {
        const gone = "SELECT audio_id FROM recordings WHERE enterprise_id = $1 AND audio_id LIKE 'b-2%'"
        await tx.query(`DELETE FROM deliveries WHERE audio_id IN (${gone})`, [enterpriseId])
        await tx.query(`DELETE FROM recordings WHERE audio_id IN (${gone})`, [enterpriseId])
      })
      await assertCountersMatch(db)
      await assertExact(db, enterpriseId, 100)
    })

    test('concurrent inserting transactions (PostgreSQL), several statements each, count every row once', {
      skip: backend !== 'postgres',
    }, async () => {
      // Lists longer than INSERT_BATCH take more than one statement each. Half of them insert the earlier
      // days first and the later ones in their second statement, the other half the other way round:
      // had their triggers locked counters statement by statement, they would deadlock.
      const large = [0, 1, 2, 3].map((k) => {
        const early = recordings(`c${k}-early`, k % 2 === 0 ? INSERT_BATCH : 200, 10 + k, -3, 0)
        const late = recordings(`c${k}-late`, k % 2 === 0 ? 200 : INSERT_BATCH, 20 + k, 1, 4)
        return k % 2 === 0 ? [...early, ...late] : [...late, ...early]
      })
      const small = Array.from({ length: 12 }, (_, k) => recordings(`s${k}`, 3, 30 + k))
      let inserting = true
      // Meanwhile, each statement sees counters and rows of the same transactions: counted in theirs.
      const watch = async () => {
        let checks = 0
        while (inserting || checks === 0) {
          const start = iso(ORIGIN - DAY + 7n * HOUR + 5n, 0)
          const params: unknown[] = [enterpriseId, start]
          const param = (value: unknown) => `$${params.push(value)}`
          const [row] = await db.query<{ counted: number; actual: number }>(
            `WITH counted AS (${countedTotalSql({ enterprise: '$1', start }, param)})
             SELECT (SELECT total FROM counted) AS counted,
                    (SELECT count(*) FROM recordings WHERE enterprise_id = $1 AND recorded_at >= $2::timestamptz) AS actual`,
            params,
          )
          assert.equal(row?.counted, row?.actual)
          checks++
        }
      }
      const watching = watch()
      try {
        await Promise.all(
          [...large, ...small].map((list) =>
            db.transaction((tx) =>
              insertRecordings(tx, enterpriseId, list, platform.context.recordingEvents),
            ),
          ),
        )
      } finally {
        inserting = false
        await watching
      }
      await assertCountersMatch(db)
      await assertExact(db, enterpriseId, 150)
    })
  })

  describe(`${backend}: the counter migrations count the recordings stored before them`, {
    timeout: 120_000,
  }, () => {
    let scratch: ScratchDatabase | undefined
    let db: Database
    let enterpriseId: number
    let applied: number[]
    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      db = scratch ? await openPostgres({ connectionString: scratch.url, max: 2 }) : await emptyPglite()
      // Recordings stored under migration 4, then the later migrations.
      await migrate(
        db,
        migrations.filter((m) => m.version <= 4),
      )
      const before = await createEnterprise(db, 'Before', null)
      const other = await createEnterprise(db, 'Other', null)
      enterpriseId = before.enterpriseId
      // Written as migration 4's schema takes them: today's insertRecordings needs later tables.
      const store = (id: number, list: NewRecording[]) =>
        db.query(
          `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
           SELECT a, $1, d, t, r, u, 60 FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
                                          AS x(a, d, t, r, u)`,
          [
            id,
            list.map((r) => r.audioId),
            list.map((r) => r.deviceUid),
            list.map((r) => r.title),
            list.map((r) => r.recordedAt),
            list.map((r) => r.denoiseUrl),
          ],
        )
      await store(before.enterpriseId, recordings('old', 400, 5))
      await store(other.enterpriseId, recordings('other', 100, 6))
      applied = await migrate(db)
    })
    after(async () => {
      await db?.close()
      await scratch?.drop()
    })

    test('the counters start equal to count(*)', async () => {
      assert.deepEqual(
        applied,
        migrations.filter((m) => m.version > 4).map((m) => m.version),
      )
      await assertCountersMatch(db)
      await assertExact(db, enterpriseId, 100)
    })

    test('a TRUNCATE empties them', async () => {
      await db.query('TRUNCATE recordings CASCADE')
      await assertCountersMatch(db)
      const [left] = await db.query<{ n: number }>('SELECT count(*) AS n FROM recording_day_counts')
      assert.equal(left?.n, 0)
    })
  })
}
