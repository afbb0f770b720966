/**
 * `npm run bench:nonces`: the size of the request nonce table under load at the rate limit, hour by hour,
 * when every nonce is kept 7 days (the rule before) and when a bearer request's nonce is kept until its
 * token expires (plus 5 minutes) and only a token request's for a year (the rule now).
 *
 * For each backend, two databases made by the platform's migrations, one per rule, take the same
 * simulated load: one enterprise at EARSHOT_RATE_LIMIT's default (6,000 requests a minute, 100 a second)
 * for BENCH_NONCE_HOURS hours (default 4), every request a fresh 12-byte nonce, a new token (of
 * EARSHOT_TOKEN_TTL, 2 hours) fetched when the last one expires. Time is simulated: each statement stores
 * BATCH_SECONDS of requests, as the platform's group commit stores those of one turn of its event loop, and
 * every 10 simulated minutes expired nonces are forgotten, 5,000 per statement, as the platform's janitor
 * does, then the table vacuumed, as its upkeep (or autovacuum) does. After each simulated hour the table's
 * size (pg_total_relation_size: rows and indexes) and rows.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from '@earshot/platform'
import { openDatabase } from '@earshot/platform/internal'
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
  publishSection,
  sectionText,
  withCleanup,
} from '../bench-support.js'

const PER_SECOND = 100
const TOKEN_TTL_SECONDS = 7200
const CLOCK_SKEW_SECONDS = 300
const OLD_WINDOW_SECONDS = 7 * 86_400
const TOKEN_WINDOW_SECONDS = 365 * 86_400
const BATCH_SECONDS = 10
const JANITOR_SECONDS = 600
const FORGET_BATCH = 5000

const hours = integerSetting('BENCH_NONCE_HOURS', 4)
const backends = backendsSetting()
cleanUpOnInterrupt()

type Rule = 'before' | 'now'

/** When a nonce stored at `t` (s) under a token expiring at `tokenExpiresAt` expires, under each rule. */
const expiry = (rule: Rule, t: number, tokenExpiresAt: number | undefined) =>
  rule === 'before'
    ? t + OLD_WINDOW_SECONDS
    : tokenExpiresAt === undefined
      ? t + TOKEN_WINDOW_SECONDS
      : tokenExpiresAt + CLOCK_SKEW_SECONDS

/** Stores one batch of nonces (the shape of the platform's group-committed INSERT). */
async function store(db: Database, expiresAt: number[]): Promise<void> {
  await db.query(
    `INSERT INTO replay_nonces (enterprise_id, key_version, nonce, expires_at)
     SELECT 1, 1, substring(decode(md5(random()::text || x::text), 'hex') FROM 1 FOR 12), to_timestamp(x)
       FROM unnest($1::float8[]) AS x
     ON CONFLICT DO NOTHING`,
    [expiresAt],
  )
}

/**
 * Forgets the nonces expired at `now` (s), a batch per statement (the platform's janitor), then lets
 * VACUUM make their space reusable, as the platform's upkeep (or autovacuum) does.
 */
async function forget(db: Database, now: number): Promise<void> {
  for (let batch = FORGET_BATCH; batch === FORGET_BATCH; ) {
    const [row] = await db.query<{ forgotten: number }>(
      `WITH expired AS (
         SELECT enterprise_id, key_version, nonce FROM replay_nonces
          WHERE expires_at < to_timestamp($1) ORDER BY expires_at LIMIT $2),
       gone AS (
         DELETE FROM replay_nonces n USING expired e
          WHERE (n.enterprise_id, n.key_version, n.nonce) = (e.enterprise_id, e.key_version, e.nonce)
         RETURNING 1)
       SELECT count(*) AS forgotten FROM gone`,
      [now, FORGET_BATCH],
    )
    batch = row?.forgotten ?? 0
  }
  await db.query('VACUUM replay_nonces')
}

interface HourFigures {
  hour: number
  rows: Record<Rule, number>
  bytes: Record<Rule, number>
}

async function measureBackend(backend: Backend): Promise<{ backend: Backend; figures: HourFigures[] }> {
  const scratches: ScratchDatabase[] = []
  const tempDir = mkdtempSync(join(tmpdir(), 'earshot-nonce-bench-'))
  const dbs: Partial<Record<Rule, Database>> = {}
  return withCleanup(
    async () => {
      for (const db of Object.values(dbs)) await db?.close()
      for (const scratch of scratches) await scratch.drop()
      rmSync(tempDir, { recursive: true, force: true })
    },
    async () => {
      for (const rule of ['before', 'now'] as const) {
        if (backend === 'pglite') dbs[rule] = await openDatabase({ dataDir: join(tempDir, rule) })
        else {
          const scratch = await scratchPostgresDatabase()
          scratches.push(scratch)
          dbs[rule] = await openDatabase({ databaseUrl: scratch.url, poolSize: 2 })
        }
      }
      const figures: HourFigures[] = []
      const start = Math.floor(Date.now() / 1000)
      let tokenExpiresAt = 0
      for (let t = start; t < start + hours * 3600; t += BATCH_SECONDS) {
        // The batch's requests: when each was made, and the expiry of the token it carried (none: a token request).
        const requests: { at: number; token: number | undefined }[] = []
        for (let s = t; s < t + BATCH_SECONDS; s++) {
          for (let i = 0; i < PER_SECOND; i++) {
            if (s >= tokenExpiresAt) {
              tokenExpiresAt = s + TOKEN_TTL_SECONDS
              requests.push({ at: s, token: undefined })
            } else requests.push({ at: s, token: tokenExpiresAt })
          }
        }
        for (const rule of ['before', 'now'] as const) {
          const db = dbs[rule] as Database
          await store(
            db,
            requests.map((request) => expiry(rule, request.at, request.token)),
          )
          if ((t - start) % JANITOR_SECONDS === 0) await forget(db, t)
        }
        if ((t + BATCH_SECONDS - start) % 3600 === 0) {
          const hour = (t + BATCH_SECONDS - start) / 3600
          const measured: HourFigures = { hour, rows: { before: 0, now: 0 }, bytes: { before: 0, now: 0 } }
          for (const rule of ['before', 'now'] as const) {
            const db = dbs[rule] as Database
            await forget(db, t + BATCH_SECONDS)
            const [row] = await db.query<{ rows: number; bytes: number }>(
              `SELECT (SELECT count(*) FROM replay_nonces) AS rows,
                      pg_total_relation_size('replay_nonces') AS bytes`,
            )
            measured.rows[rule] = row?.rows ?? 0
            measured.bytes[rule] = row?.bytes ?? 0
          }
          figures.push(measured)
          log(
            `  ${backend}, hour ${hour}: ${format(measured.rows.before)} rows (${format(measured.bytes.before / 2 ** 20, 1)} MiB) before, ${format(measured.rows.now)} rows (${format(measured.bytes.now / 2 ** 20, 1)} MiB) now`,
          )
        }
      }
      return { backend, figures }
    },
  )
}

const machine = machineLine()
const { reports, skipped } = await measureBackends(backends, measureBackend)
const mib = (bytes: number) => format(bytes / 2 ** 20, 1)
const section = sectionText(
  [
    `Measured ${machine}. One enterprise at the default rate limit (100 requests a second) for ${hours} simulated hours, every request a fresh nonce, a new 2-hour token fetched when the last expires; expired nonces forgotten every 10 simulated minutes, then the table vacuumed. Rows and pg_total_relation_size('replay_nonces') (table and indexes) after each hour.`,
    ...reports.map(({ backend, figures }) =>
      [
        `### ${backend === 'pglite' ? 'PGlite' : 'PostgreSQL'}`,
        '',
        '| after | every nonce kept 7 days (before) | kept while it matters (now) |',
        '|---|---:|---:|',
        ...figures.map(
          (hour) =>
            `| ${hour.hour} h | ${format(hour.rows.before)} rows, ${mib(hour.bytes.before)} MiB | ${format(hour.rows.now)} rows, ${mib(hour.bytes.now)} MiB |`,
        ),
        '',
        `Before, the table grows by an hour of requests every hour until the seventh day (about ${format((PER_SECOND * OLD_WINDOW_SECONDS) / 1e6, 1)} million rows); now it stops growing once the first token has expired, at about two hours of requests.`,
      ].join('\n'),
    ),
  ],
  skipped,
)
publishSection('nonces', section, { heading: '## Request nonces kept (`npm run bench:nonces`)' })
