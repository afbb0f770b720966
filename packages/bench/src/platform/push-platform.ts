/**
 * Child process of `push.bench.ts`: the platform as `earshot serve` runs it, configured from the
 * environment (the bench sets the database, ports, admin token, EARSHOT_PUSH_ALLOW_PRIVATE=1,
 * EARSHOT_RATE_LIMIT=0 and EARSHOT_LOG_LEVEL=warn; any other EARSHOT_* setting in the bench's
 * environment, e.g. EARSHOT_PUSH_CONCURRENCY, reaches it too). Reports its URLs and push settings.
 */
import { loadConfig, startPlatform } from '@earshot/platform'
import { TEST_ADMIN_TOKEN } from '@earshot/test-kit/backends'
import { serveParent } from '../child.js'

export interface PushPlatformReady {
  type: 'ready'
  partnerUrl: string
  adminUrl: string
  adminToken: string
  databaseVersion: string
  /** PostgreSQL server settings that bear on a write-heavy queue (empty on PGlite). */
  serverSettings: string
  settings: {
    pushConcurrency: number
    pushConcurrencyPerUrl: number
    pushTimeoutSeconds: number
    databasePoolSize: number
  }
}

const config = { ...loadConfig(process.env), adminToken: process.env.EARSHOT_ADMIN_TOKEN ?? TEST_ADMIN_TOKEN }
const platform = await startPlatform({ config })
const { db } = platform.context
const [version] = await db.query<{ version: string }>('SELECT version()')
const serverSettings =
  db.kind === 'postgres'
    ? (
        await db.query<{ name: string; setting: string }>(
          `SELECT name, current_setting(name) AS setting FROM pg_settings
            WHERE name IN ('synchronous_commit', 'autovacuum', 'shared_buffers') ORDER BY name`,
        )
      )
        .map(({ name, setting }) => `${name}=${setting}`)
        .join(', ')
    : ''

serveParent(
  {
    partnerUrl: platform.partnerUrl,
    adminUrl: platform.adminUrl,
    adminToken: config.adminToken,
    databaseVersion: version?.version ?? 'unknown',
    serverSettings,
    settings: {
      pushConcurrency: config.pushConcurrency,
      pushConcurrencyPerUrl: config.pushConcurrencyPerUrl,
      pushTimeoutSeconds: config.pushTimeoutSeconds,
      databasePoolSize: config.databasePoolSize,
    },
  } satisfies Omit<PushPlatformReady, 'type'>,
  () => platform.close(),
)
