/**
 * `npm run bench:feed`: a change feed read at the end of a long history against the same read at the end
 * of a short one, on both backends.
 *
 * For each backend (BENCH_BACKENDS), two platforms run in this process, each on a database of its own
 * (PGlite in a data directory, PostgreSQL in a scratch database): one grown to BENCH_FEED_CHANGES changes
 * (default 1,000,000), one to BASELINE_CHANGES, the same way:
 *
 * 1. one JSON Lines import through the admin API (streamed as it is generated), into an enterprise that has a
 *    push URL, so each recording has its delivery;
 * 2. the partner reads the whole feed through the partner API (EarshotClient, pages of 100), as a partner
 *    following it would: every change numbered, every read a request nonce;
 * 3. the churn production adds meanwhile, in batches of CHURN_BATCH: every delivery claimed, attempted,
 *    acknowledged, confirmed, then pruned with its attempt, and as many request nonces stored then expired
 *    and forgotten, with the platform's own statements' shapes;
 * 4. the database's upkeep keeping up with it: a pass of the platform's (tendDatabase: VACUUM and ANALYZE
 *    where its rules call for them) after each batch, as its 10 s schedule would at about 1,000 churned rows
 *    a second, and once more at the end until nothing is left to do (on PostgreSQL with autovacuum on, what
 *    autovacuum would do, done now). Each statement's duration is kept: on PGlite it holds the connection.
 *
 * Then, interleaved over ROUNDS rounds, READS reads at the end of each feed: the last 100 changes (a
 * partner catching up) and the read past them that finds nothing new (a partner following). Latency is
 * measured around EarshotClient.changes(); the target compares the medians: the long history within 1.3x
 * of the short one.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { EarshotClient } from '@earshot/partner'
import { loadConfig, type RunningPlatform, startPlatform } from '@earshot/platform'
import { AdminClient } from '@earshot/platform/admin-client'
import { createEnterprise, tendDatabase, type UpkeepStep } from '@earshot/platform/internal'
import { type ScratchDatabase, scratchPostgresDatabase } from '@earshot/test-kit/backends'
import {
  type Backend,
  backendsSetting,
  cleanUpOnInterrupt,
  format,
  integerSetting,
  log,
  machineLine,
  measureBackends,
  ms,
  publishSection,
  sectionText,
  withCleanup,
  yes,
} from '../bench-support.js'
import { importLines } from './import-lines.js'

const TARGET_RATIO = 1.3
const ISSUE_CHANGES = 1_000_000
const BASELINE_CHANGES = 1000
const ROUNDS = 5
const READS = 100
const CHURN_BATCH = 10_000
const ADMIN_TOKEN = 'bench-admin-token-0123456789'

const changes = integerSetting('BENCH_FEED_CHANGES', ISSUE_CHANGES)
const backends = backendsSetting()
cleanUpOnInterrupt()

interface Grown {
  label: string
  platform: RunningPlatform
  client: EarshotClient
  /** The cursor before the last 100 changes, and the one at the end. */
  beforeLast: string
  end: string
  importSeconds: number
  growSeconds: number
  /** The upkeep's VACUUM and ANALYZE statements while it grew, ms each. */
  upkeepMs: number[]
}

/** Every delivery through its life and gone, and as many nonces stored and forgotten, CHURN_BATCH at a time. */
async function churn(platform: RunningPlatform, count: number): Promise<UpkeepStep[]> {
  const { db } = platform.context
  const upkeep: UpkeepStep[] = []
  for (let done = 0; done < count; done += CHURN_BATCH) {
    await db.query(
      `WITH claimed AS (
         UPDATE deliveries d SET state = 'in_flight', claim_no = claim_no + 1, claimed_by = 'bench', claimed_at = now(),
                                 due_at = now() + interval '30 seconds'
          WHERE delivery_id IN (SELECT delivery_id FROM deliveries WHERE state = 'pending' ORDER BY due_at LIMIT $1)
         RETURNING delivery_id, claim_no)
       INSERT INTO delivery_attempts (delivery_id, claim_no, claimed_by, started_at, duration_ms, outcome, http_status,
                                      response_code)
       SELECT delivery_id, claim_no, 'bench', now(), 3, 'acked', 200, 2000 FROM claimed`,
      [CHURN_BATCH],
    )
    await db.query(
      `UPDATE deliveries SET state = 'acked', acks = 1, acked_at = now(), claimed_by = NULL,
                             due_at = now() + interval '10 minutes'
        WHERE state = 'in_flight' AND claimed_by = 'bench'`,
    )
    await db.query(
      `UPDATE deliveries SET state = 'confirmed', received_at = now(), confirmed_at = now() - interval '31 days',
                             due_at = NULL
        WHERE state = 'acked'`,
    )
    await db.query(
      `WITH old AS (SELECT delivery_id FROM deliveries WHERE state = 'confirmed' ORDER BY confirmed_at LIMIT $1),
            attempts AS (DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT delivery_id FROM old))
       DELETE FROM deliveries WHERE delivery_id IN (SELECT delivery_id FROM old)`,
      [CHURN_BATCH],
    )
    await db.query(
      `INSERT INTO replay_nonces (enterprise_id, key_version, nonce, expires_at)
       SELECT 1, 1, substring(decode(md5(random()::text || g::text), 'hex') FROM 1 FOR 12),
              now() - interval '1 minute'
         FROM generate_series(1, $1) AS g`,
      [CHURN_BATCH],
    )
    await db.query('DELETE FROM replay_nonces WHERE expires_at < now()')
    upkeep.push(...(await tendDatabase(db)))
  }
  return upkeep
}

/**
 * Reads the whole feed, pages of 100, until it has seen `count` changes (a transaction elsewhere on the
 * server may hold the last ones back a while); returns the cursors before the last page and at the end.
 */
async function readToEnd(client: EarshotClient, count: number): Promise<{ beforeLast: string; end: string }> {
  let cursor: string | undefined
  let beforeLast = ''
  for (let seen = 0; ; ) {
    const page = await client.changes({ cursor, size: 100 })
    if (page.items.length > 0) beforeLast = cursor ?? ''
    seen += page.items.length
    cursor = page.nextCursor
    if (seen >= count) return { beforeLast, end: cursor }
    if (!page.hasMore) await sleep(100)
  }
}

/** Passes of the platform's upkeep until one has nothing left to do; their statements. */
async function settle(platform: RunningPlatform): Promise<UpkeepStep[]> {
  const steps: UpkeepStep[] = []
  for (;;) {
    const pass = await tendDatabase(platform.context.db)
    if (pass.length === 0) return steps
    steps.push(...pass)
  }
}

async function grow(label: string, count: number, storage: { databaseUrl?: string; dataDir?: string }) {
  log(`  ${label}: ${format(count)} changes`)
  const started = performance.now()
  const platform = await startPlatform({
    config: {
      ...loadConfig({}),
      port: 0,
      adminPort: 0,
      adminToken: ADMIN_TOKEN,
      logLevel: 'warn',
      pushDispatch: false,
      rateLimitPerMinute: 0,
      databaseUrl: storage.databaseUrl,
      dataDir: storage.dataDir ?? 'memory://',
    },
  })
  const { enterpriseId, secret } = await createEnterprise(
    platform.context.db,
    label,
    'https://partner.example/push',
  )
  const admin = new AdminClient(platform.adminUrl, ADMIN_TOKEN)
  const importSeconds = await importLines(admin, enterpriseId, count)
  log(`    imported in ${format(importSeconds, 1)} s`)
  const client = new EarshotClient({ baseUrl: platform.partnerUrl, enterpriseId, keyVersion: 1, secret })
  const { beforeLast, end } = await readToEnd(client, count)
  const upkeep = await churn(platform, count)
  upkeep.push(...(await settle(platform)))
  const grown: Grown = {
    label,
    platform,
    client,
    beforeLast,
    end,
    importSeconds,
    growSeconds: (performance.now() - started) / 1000,
    upkeepMs: upkeep.map((step) => step.ms),
  }
  log(`    grown in ${format(grown.growSeconds, 0)} s`)
  return grown
}

const percentile = (values: number[], share: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(sorted.length * share) - 1)] ?? Number.NaN
}
const median = (values: number[]) => percentile(values, 0.5)

async function timedReads(grown: Grown, cursor: string): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < READS; i++) {
    const started = performance.now()
    await grown.client.changes({ cursor, size: 100 })
    times.push(performance.now() - started)
  }
  return times
}

interface BackendReport {
  backend: Backend
  small: Grown
  large: Grown
  /** Per round: median ms of the last-page read and of the caught-up read, short then long history. */
  rounds: { lastPage: [number, number]; caughtUp: [number, number] }[]
}

async function measureBackend(backend: Backend): Promise<BackendReport> {
  const scratches: ScratchDatabase[] = []
  const tempDir = mkdtempSync(join(tmpdir(), 'earshot-feed-bench-'))
  const storage = async (name: string) => {
    if (backend === 'pglite') return { dataDir: join(tempDir, name) }
    const scratch = await scratchPostgresDatabase()
    scratches.push(scratch)
    return { databaseUrl: scratch.url }
  }
  const grownAll: Grown[] = []
  return withCleanup(
    async () => {
      for (const grown of grownAll) await grown.platform.close()
      for (const scratch of scratches) await scratch.drop()
      rmSync(tempDir, { recursive: true, force: true })
    },
    async () => {
      log(`${backend}: growing the histories`)
      const small = await grow('short history', BASELINE_CHANGES, await storage('short'))
      grownAll.push(small)
      const large = await grow('long history', changes, await storage('long'))
      grownAll.push(large)
      log(`${backend}: ${ROUNDS} rounds of ${READS} reads at the end of each feed, interleaved`)
      const rounds: BackendReport['rounds'] = []
      for (let round = 0; round < ROUNDS; round++) {
        const lastPage = [
          median(await timedReads(small, small.beforeLast)),
          median(await timedReads(large, large.beforeLast)),
        ]
        const caughtUp = [
          median(await timedReads(small, small.end)),
          median(await timedReads(large, large.end)),
        ]
        rounds.push({ lastPage: lastPage as [number, number], caughtUp: caughtUp as [number, number] })
        log(
          `  round ${round + 1}: last page ${ms(lastPage[0] ?? 0)} / ${ms(lastPage[1] ?? 0)} ms, caught up ${ms(caughtUp[0] ?? 0)} / ${ms(caughtUp[1] ?? 0)} ms`,
        )
      }
      return { backend, small, large, rounds }
    },
  )
}

function renderBackend(report: BackendReport): string {
  const { small, large, rounds } = report
  const column = (pick: (round: BackendReport['rounds'][number]) => [number, number], i: 0 | 1) =>
    median(rounds.map((round) => pick(round)[i]))
  const lastShort = column((r) => r.lastPage, 0)
  const lastLong = column((r) => r.lastPage, 1)
  const upShort = column((r) => r.caughtUp, 0)
  const upLong = column((r) => r.caughtUp, 1)
  const atScale = changes >= ISSUE_CHANGES
  const target = (ratio: number) =>
    atScale
      ? `${yes(ratio <= TARGET_RATIO)} (${format(ratio, 2)}x)`
      : `not assessed at ${format(changes)} changes (${format(ratio, 2)}x)`
  return [
    report.backend === 'pglite' ? '### PGlite, data directory on disk' : '### PostgreSQL',
    '',
    '| read | short history | long history | long / short |',
    '|---|---:|---:|---:|',
    `| the last 100 changes (median of ${ROUNDS} rounds' medians, ms) | ${ms(lastShort)} | ${ms(lastLong)} | ${format(lastLong / lastShort, 2)}x |`,
    `| caught up: nothing new (ms) | ${ms(upShort)} | ${ms(upLong)} | ${format(upLong / upShort, 2)}x |`,
    '',
    `Histories: ${format(BASELINE_CHANGES)} and ${format(changes)} changes, grown in ${format(small.growSeconds)} s and ${format(large.growSeconds)} s. Import of ${format(BASELINE_CHANGES)} lines: ${format(small.importSeconds, 1)} s; of ${format(changes)} lines: ${format(large.importSeconds, 1)} s (an import's memory: \`npm run bench:import\`).`,
    '',
    `Upkeep while the long history grew: ${format(large.upkeepMs.length)} VACUUM / ANALYZE statements, median ${ms(median(large.upkeepMs))} ms, p99 ${ms(percentile(large.upkeepMs, 0.99))} ms, longest ${ms(Math.max(...large.upkeepMs))} ms${report.backend === 'pglite' ? " (each holds the embedded database's one connection)" : ''}.`,
    '',
    `Targets: a read at the end of the long history within ${TARGET_RATIO}x of the same read at ${format(BASELINE_CHANGES)} changes: last page ${target(lastLong / lastShort)}, caught up ${target(upLong / upShort)}.`,
  ].join('\n')
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const section = sectionText(
  [
    `Measured ${machine}. Each history grown as production grows it: one streamed JSON Lines import (a delivery per recording), the whole feed read through the partner API in pages of 100, every delivery claimed, acknowledged, confirmed and pruned and as many request nonces stored and forgotten (${format(CHURN_BATCH)} at a time), with a pass of the platform's upkeep after each batch and until nothing was left to do. Reads through EarshotClient, one at a time, ${READS} per round and history, ${ROUNDS} rounds interleaved.`,
    ...reports.map(renderBackend),
  ],
  skipped,
)
publishSection('feed', section, {
  heading: '## Change feed at scale (`npm run bench:feed`)',
})
