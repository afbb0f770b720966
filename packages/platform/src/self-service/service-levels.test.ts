import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { callbackSender, startTestReceiver } from '@earshot/test-kit/test-receiver'
import { latencyBucket } from './level-counts.js'
import { computeLevels, LevelsCache } from './service-levels.js'

/** The service levels against what the deliveries table says, computed here from its rows. */

const HOUR = 3600_000
const NOW = Date.parse('2026-06-10T12:00:00Z')

/** Nearest rank: the smallest value with at least p of the values at or below it. */
function nearestRank(values: number[], p: number): number | null {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.ceil(p * sorted.length) - 1] ?? null
}

interface Row {
  state: string
  event_type: string
  created: number
  first_attempt: number | null
  first_acked: boolean | null
  acked: number | null
  confirmed: number | null
}

function expectedLevels(rows: Row[], windowMs: number, now = NOW) {
  const inWindow = rows.filter((row) => row.created >= now - windowMs && row.created < now)
  const attempted = inWindow.filter((row) => row.first_attempt !== null)
  const firstMs = attempted.map((row) => latencyBucket((row.first_attempt as number) - row.created))
  const receiptMs = inWindow
    .filter(
      (row) => row.state === 'confirmed' && row.acked !== null && row.event_type !== PushEventType.DELETED,
    )
    .map((row) => latencyBucket(Math.max(0, (row.confirmed as number) - (row.acked as number))))
  return {
    firstAttemptP50Ms: nearestRank(firstMs, 0.5),
    firstAttemptP95Ms: nearestRank(firstMs, 0.95),
    firstAttemptAckShare: attempted.length
      ? attempted.filter((row) => row.first_acked).length / attempted.length
      : null,
    ackToReceiptP95Ms: nearestRank(receiptMs, 0.95),
    backlog: rows.filter((row) => ['pending', 'held', 'queued', 'in_flight'].includes(row.state)).length,
  }
}

/** A deterministic spread of deliveries: every state, inside and outside both windows. */
function syntheticRows(count: number): Row[] {
  let seed = 7
  const next = () => {
    seed = (seed * 48271) % 2147483647
    return seed / 2147483647
  }
  const states = [
    'confirmed',
    'confirmed',
    'confirmed',
    'failed',
    'unconfirmed',
    'pending',
    'held',
    'queued',
    'acked',
  ]
  return Array.from({ length: count }, () => {
    const state = states[Math.floor(next() * states.length)] as string
    const created = NOW - Math.floor(next() * 9 * 24 * HOUR)
    const attempted = state !== 'queued' && state !== 'held'
    const firstAttempt = attempted ? created + Math.floor(next() * 5000) : null
    const acked = ['confirmed', 'acked', 'unconfirmed'].includes(state) ? (firstAttempt as number) + 40 : null
    return {
      state,
      event_type: next() < 0.1 ? PushEventType.DELETED : PushEventType.AUDIO_READY,
      created,
      first_attempt: firstAttempt,
      first_acked: attempted ? state !== 'failed' : null,
      acked,
      confirmed: state === 'confirmed' ? (acked as number) + Math.floor(next() * 20_000) : null,
    }
  })
}

for (const backend of testBackends) {
  describe(`${backend}: service levels`, { timeout: 90_000 }, () => {
    let platform: TestPlatform
    before(async () => {
      platform = await startTestPlatform(backend, {
        pushRetryScheduleSeconds: [0.1],
        pushTimeoutSeconds: 0.5,
      })
    })
    after(() => platform.stop())

    test('match the rows of the deliveries table, in both windows', async () => {
      const partner = await createPartner(platform, 'Levels')
      const other = await createPartner(platform, 'Other')
      const rows = syntheticRows(400)
      const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
      for (const [index, row] of [...rows, ...syntheticRows(50)].entries()) {
        const enterpriseId = index < rows.length ? partner.enterpriseId : other.enterpriseId
        await platform.context.db.query(
          `INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, state, due_at, created_at,
                                   first_attempt_at, first_attempt_acked, acked_at, confirmed_at)
           VALUES ($1, $2, $3, $4, $5, CASE WHEN $5 IN ('confirmed', 'failed', 'unconfirmed', 'queued') THEN NULL
                        ELSE now() + interval '1 year' END,
                   $6, $7, $8, $9, $10)`,
          [
            `evt-levels-${index}`,
            enterpriseId,
            `levels-${index}`,
            row.event_type,
            row.state,
            at(row.created),
            at(row.first_attempt),
            row.first_acked,
            at(row.acked),
            at(row.confirmed),
          ],
        )
      }
      for (const [window, ms] of [
        ['24h', 24 * HOUR],
        ['7d', 7 * 24 * HOUR],
      ] as const) {
        const levels = (await computeLevels(platform.context.db, partner.enterpriseId, NOW))[window]
        const expected = expectedLevels(rows, ms)
        assert.deepEqual(
          { ...levels, firstAttemptAckShare: null },
          { ...expected, firstAttemptAckShare: null },
          window,
        )
        assert.ok(
          Math.abs((levels.firstAttemptAckShare ?? -1) - (expected.firstAttemptAckShare ?? -2)) < 1e-12,
        )
      }

      // A delivery of an old hour attempted now: the next read counts its hour again.
      const late = rows.findIndex((row) => row.first_attempt === null && row.created > NOW - 6 * 24 * HOUR)
      const lateRow = rows[late] as Row
      lateRow.first_attempt = lateRow.created + 1234
      lateRow.first_acked = true
      await platform.context.db.query(
        `WITH d AS (UPDATE deliveries SET first_attempt_at = $2, first_attempt_acked = true WHERE event_id = $1
                    RETURNING delivery_id)
         INSERT INTO delivery_attempts (delivery_id, claim_no, claimed_by, started_at, duration_ms, outcome, stale)
         SELECT delivery_id, 1, 'test', $3, 5, 'acked', false FROM d`,
        [`evt-levels-${late}`, at(lateRow.first_attempt), at(NOW - 1000)],
      )
      const again = (await computeLevels(platform.context.db, partner.enterpriseId, NOW + 5000))['7d']
      const later = expectedLevels(rows, 7 * 24 * HOUR, NOW + 5000)
      assert.equal(again.firstAttemptP50Ms, later.firstAttemptP50Ms)
      assert.equal(again.firstAttemptAckShare, later.firstAttemptAckShare, 'the late attempt is counted')
    })

    test("a delivery's first attempt is recorded as it is pushed: the figures follow the attempts table", async () => {
      const partner = await createPartner(platform, 'Pushed')
      const seen = new Set<string>()
      let failedFirsts = 0
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const receiver = await startTestReceiver(partner.secret, {
        // The first push of two recordings fails: their first attempts are not acknowledged.
        answer: (push) => {
          const first = !seen.has(push.event.eventId)
          seen.add(push.event.eventId)
          if (first && failedFirsts < 2) {
            failedFirsts++
            return { status: 500, body: 'no' }
          }
          return { status: 200, body: { code: 2000 } }
        },
        afterAnswer: (push, answer) => {
          if (answer.status === 200) void callback(push.event.audioId)
        },
      })
      try {
        await adminCall(platform, 'setPushUrl', {
          params: { enterpriseId: partner.enterpriseId },
          body: { pushUrl: receiver.url },
        })
        for (let i = 0; i < 6; i++) {
          await ingest(platform, partner.enterpriseId, {
            deviceUid: 'DEV-L',
            title: `t${i}`,
            recordedAt: '2026-03-01T10:00:00Z',
            denoiseUrl: `https://media.example/l${i}.mp3`,
            recordDuration: 1000,
          })
        }
        await eventually(
          async () => {
            const [row] = await platform.context.db.query<{ open: number }>(
              `SELECT count(*) FILTER (WHERE state <> 'confirmed')::int AS open FROM deliveries WHERE enterprise_id = $1`,
              [partner.enterpriseId],
            )
            return row?.open === 0
          },
          20_000,
          'every delivery confirmed',
        )
        const firsts = await platform.context.db.query<{ ms: number; acked: boolean }>(
          `SELECT extract(epoch FROM a.started_at - d.created_at) * 1000 AS ms, a.outcome = 'acked' AS acked
             FROM deliveries d
             JOIN LATERAL (SELECT started_at, outcome FROM delivery_attempts WHERE delivery_id = d.delivery_id
                            ORDER BY claim_no, attempt_id LIMIT 1) a ON true
            WHERE d.enterprise_id = $1`,
          [partner.enterpriseId],
        )
        assert.equal(firsts.length, 6)
        const levels = (await computeLevels(platform.context.db, partner.enterpriseId, Date.now()))['24h']
        const ms = firsts.map((row) => latencyBucket(Number(row.ms)))
        assert.equal(levels.firstAttemptP50Ms, nearestRank(ms, 0.5))
        assert.equal(levels.firstAttemptP95Ms, nearestRank(ms, 0.95))
        assert.equal(levels.firstAttemptAckShare, firsts.filter((row) => row.acked).length / 6)
        assert.equal(levels.firstAttemptAckShare, 4 / 6)
        assert.equal(levels.backlog, 0)
        assert.notEqual(levels.ackToReceiptP95Ms, null)
      } finally {
        await receiver.close()
      }
    })

    test('read through the cache: the same figures within the lag, new ones after it', async () => {
      const partner = await createPartner(platform, 'Cached')
      let now = NOW
      const cache = new LevelsCache(platform.context.db, () => now, 60_000)
      const first = await cache.read(partner.enterpriseId, '24h')
      assert.equal(first.backlog, 0)
      await platform.context.db.query(
        `INSERT INTO deliveries (event_id, enterprise_id, audio_id, event_type, state, due_at, created_at)
         VALUES ('evt-cached', $1, 'cached-1', $2, 'pending', now() + interval '1 year', $3)`,
        [partner.enterpriseId, PushEventType.AUDIO_READY, new Date(NOW).toISOString()],
      )
      assert.equal((await cache.read(partner.enterpriseId, '24h')).backlog, 0, 'held within the lag')
      now += 10_000
      assert.equal(
        (await cache.read(partner.enterpriseId, '24h')).backlog,
        1,
        'read again once older than 10 s',
      )
    })
  })
}
