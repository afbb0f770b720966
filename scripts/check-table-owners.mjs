// Each table of the platform's database belongs to one feature folder, whose store is the only code that
// writes it. Another feature asks that store. A few statements read another feature's table in the same
// statement, because one statement must lock or count several tables at once. Each of those is named in
// SHARED_READS with its reason. Any other SQL naming another feature's table fails `npm run lint`.
//   node scripts/check-table-owners.mjs [ROOT]     (ROOT: a tree with packages/platform/src; this repository by default)
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

const OWNERS = {
  access: [
    'operators',
    'operator_setup_tokens',
    'operator_sessions',
    'api_keys',
    'sign_in_failures',
    'sso_sign_ins',
  ],
  audit: ['audit_log', 'audit_chain'],
  auth: ['replay_nonces', 'platform_settings'],
  changes: ['recording_changes', 'recording_change_queue', 'change_feed_head', 'change_feed_heads'],
  deliveries: ['deliveries', 'delivery_attempts', 'delivery_rechecks', 'receipts'],
  endpoints: ['endpoints', 'push_endpoints'],
  enterprises: ['enterprises', 'enterprise_keys'],
  erasures: ['erasures', 'erasure_recordings', 'erasure_deletions', 'erasure_confirmations'],
  media: ['recording_audio', 'media_garbage', 'media_link_keys', 'media_uploads'],
  'push-urls': ['push_url_health'],
  portal: ['portal_links', 'portal_sessions'],
  'receiver-check': ['receiver_checks'],
  'self-service': ['delivery_level_hours', 'delivery_level_checks'],
  recordings: [
    'recordings',
    'recording_tombstones',
    'recording_minute_counts',
    'recording_hour_counts',
    'recording_day_counts',
    'recording_device_day_counts',
    'recording_device_month_counts',
  ],
  storage: ['schema_migrations', 'event_types'],
}

const SHARED_READS = {
  'access/key-routes.ts': {
    tables: ['enterprises'],
    why: "a key's enterprises must exist when it is created: one statement checks them all",
  },
  'auth/credentials.ts': {
    tables: ['enterprises', 'enterprise_keys'],
    why: "every partner request's keys and disabled flag in one statement, on the hot path",
  },
  'deliveries/delivery-store.ts': {
    tables: ['endpoints', 'push_url_health', 'enterprises', 'enterprise_keys', 'recordings'],
    why: "a claim reads its delivery's endpoint, URL health, key and recording in the statement that locks it",
  },
  'deliveries/delivery-receipts.ts': {
    tables: ['recordings', 'recording_tombstones'],
    why: 'a receipt is matched to its recording in the statement that confirms its deliveries',
  },
  'deliveries/delivery-erasure.ts': {
    tables: ['endpoints', 'recording_tombstones'],
    why: "an erasure's deletion pushes, each with whether its endpoint was removed since; which deleted recordings the partner had, judged as the receipt callback judges them",
  },
  'endpoints/endpoint-store.ts': {
    tables: ['enterprises', 'deliveries', 'push_url_health'],
    why: "locks the enterprise's row first (the lock order); lists endpoints with their backlog and URL health",
  },
  'enterprises/enterprise-store.ts': {
    tables: ['endpoints'],
    why: "an enterprise's push URL (its first endpoint) in the enterprises' list",
  },
  'push-urls/push-url-health.ts': {
    tables: ['endpoints'],
    why: 'which enterprises push to a URL, in the statement that lists its health',
  },
  'self-service/level-hours.ts': {
    tables: ['deliveries', 'delivery_attempts'],
    why: "the service levels' rollup counts an hour of an enterprise's deliveries, and finds those attempted or confirmed since it last looked",
  },
  'self-service/service-levels.ts': {
    tables: ['deliveries'],
    why: "the levels' newest and oldest part-hours are counted from the deliveries as they are, and the backlog now",
  },
  'portal/portal-links.ts': {
    tables: ['enterprises'],
    why: 'a link is spent only while its enterprise is enabled, in the statement that spends it',
  },
  'portal/portal-sessions.ts': {
    tables: ['enterprises'],
    why: "every portal request's session with its enterprise's name and disabled flag, in one statement",
  },
  'media/media-route.ts': {
    tables: ['enterprises'],
    why: "a download's lookup refuses a disabled enterprise's audio in the same statement",
  },
}

const TABLE = /\b(DELETE\s+FROM|INSERT\s+INTO|UPDATE|FROM|JOIN|INTO|TABLE)\s+(?:ONLY\s+)?"?([a-z_]+)\b/gi
const WRITES = /^(DELETE|INSERT|UPDATE|INTO)/i

const root = process.argv[2] ?? '.'
const src = join(root, 'packages/platform/src')
const ownerOf = new Map(Object.entries(OWNERS).flatMap(([folder, tables]) => tables.map((t) => [t, folder])))
const problems = []
let statements = 0
for (const path of sources(src)) {
  const file = relative(src, path)
  const folder = file.split('/')[0]
  const text = readFileSync(path, 'utf8')
  for (const [, verb, table] of text.matchAll(TABLE)) {
    const owner = ownerOf.get(table)
    if (owner === undefined || owner === folder) continue
    statements++
    const shared = SHARED_READS[file]
    if (WRITES.test(verb))
      problems.push(`${file} writes ${table}, which ${owner}/ owns: call ${owner}/'s store`)
    else if (!shared?.tables.includes(table))
      problems.push(
        `${file} reads ${table}, which ${owner}/ owns: call ${owner}/'s store (or list it in SHARED_READS with why)`,
      )
  }
}
for (const problem of problems) console.error(problem)
if (problems.length > 0) process.exit(1)
console.log(`check-table-owners: ${statements} reads of another feature's table, each listed with its reason`)

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'test') yield* sources(path)
    } else if (entry.name.endsWith('.ts') && !entry.name.includes('.test.')) yield path
  }
}
