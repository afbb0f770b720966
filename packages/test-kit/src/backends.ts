import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import {
  loadConfig,
  type PlatformConfig,
  type PlatformOptions,
  type RunningPlatform,
  startPlatform,
} from '@earshot/platform'
import pg from 'pg'
import { TEST_ADMIN_TOKEN } from './admin-token.js'
import { lendImageCopy } from './image-copies.js'
import { preparePglite } from './pglite-image.js'
import { databaseUrl, migratedPostgresTemplate } from './postgres-template.js'

export type BackendName = 'pglite' | 'postgres'

/**
 * The backends each suite runs on: PGlite always, PostgreSQL too when DATABASE_URL names a server; or those
 * TEST_BACKENDS names (`postgres`, `pglite`, or both, comma-separated). CI runs the test command twice, on
 * two versions of Node, and gives each run one backend.
 */
export const testBackends: BackendName[] = chosenBackends(process.env.TEST_BACKENDS)

function chosenBackends(names: string | undefined): BackendName[] {
  const available: BackendName[] = ['pglite', ...(process.env.DATABASE_URL ? (['postgres'] as const) : [])]
  if (!names) return available
  const chosen = names.split(',').map((name) => name.trim())
  for (const name of chosen) {
    if (!available.includes(name as BackendName))
      throw new Error(`TEST_BACKENDS names ${name}; the backends here are ${available.join(', ')}`)
  }
  return available.filter((name) => chosen.includes(name))
}

/**
 * For the few suites that take minutes on each backend: PostgreSQL when DATABASE_URL names a server,
 * else PGlite. CI runs these suites both ways (with DATABASE_URL on Node 24, without on Node 20), so each
 * backend is still run once.
 */
export const oneTestBackend: BackendName = process.env.DATABASE_URL ? 'postgres' : 'pglite'

export interface ScratchDatabase {
  url: string
  drop(): Promise<void>
}

/**
 * A new database on the DATABASE_URL server, dropped again by drop(): empty, or with `migrated` a copy of
 * one with the current schema.
 */
export async function scratchPostgresDatabase({ migrated = false } = {}): Promise<ScratchDatabase> {
  const serverUrl = process.env.DATABASE_URL
  if (!serverUrl) throw new Error('DATABASE_URL is not set')
  const name = `earshot_test_${randomBytes(6).toString('hex')}`
  const template = migrated ? ` TEMPLATE ${await migratedPostgresTemplate(serverUrl)}` : ''
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}${template}`)
  } finally {
    await admin.end()
  }
  return {
    url: databaseUrl(serverUrl, name),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await client.end()
      }
    },
  }
}

export { TEST_ADMIN_TOKEN }

/** Configuration for a test platform: loopback, ephemeral ports, quiet, no environment leaking in. */
export function testConfig(overrides: Partial<PlatformConfig> = {}): PlatformConfig {
  return {
    ...loadConfig({}),
    port: 0,
    adminPort: 0,
    dataDir: 'memory://',
    adminToken: TEST_ADMIN_TOKEN,
    logLevel: 'silent',
    shutdownGraceSeconds: 2,
    // Test receivers listen on loopback; tests name the discard port (9) as a URL nothing answers.
    pushAllowPrivate: true,
    pushPorts: ['1-65535'],
    ...overrides,
  }
}

export interface TestPlatform extends RunningPlatform {
  /** The break-glass owner key every test platform is started with. */
  adminToken: string
  /** Closes the platform and drops its scratch database. */
  stop(): Promise<void>
}

/**
 * Starts a platform on the named backend: in-memory PGlite, or a scratch PostgreSQL database (shared
 * with other instances when `databaseUrl` is given).
 */
export async function startTestPlatform(
  backend: BackendName,
  overrides: Partial<PlatformConfig> = {},
  options: Omit<PlatformOptions, 'config'> = {},
): Promise<TestPlatform> {
  const scratch =
    backend === 'postgres' && !overrides.databaseUrl
      ? await scratchPostgresDatabase({ migrated: true })
      : undefined
  const config = testConfig({ ...(scratch && { databaseUrl: scratch.url }), ...overrides })
  const image = await preparePglite(config)
  const database = image === undefined ? undefined : await lendImageCopy(image)
  const platform = await startPlatform({ config, database, ...options }).catch(async (error: unknown) => {
    await scratch?.drop()
    throw error
  })
  return {
    ...platform,
    adminToken: config.adminToken ?? '',
    async stop() {
      await platform.close()
      await scratch?.drop()
    },
  }
}

/** Platforms of one suite on storage that outlives each of them: a PGlite data directory or a scratch database. */
export interface DurablePlatforms {
  /** Where the storage is, as configuration (valid once the suite has begun). */
  readonly overrides: Partial<Pick<PlatformConfig, 'dataDir' | 'databaseUrl'>>
  /** Starts a platform on the storage; the suite stops it at the end if the test did not. */
  start(overrides?: Partial<PlatformConfig>): Promise<TestPlatform>
}

/** Called in a describe: makes the storage before its tests, stops its platforms and removes it after. */
export function durablePlatforms(backend: BackendName): DurablePlatforms {
  let storage: {
    overrides: Partial<Pick<PlatformConfig, 'dataDir' | 'databaseUrl'>>
    dispose(): Promise<void>
  }
  const running: TestPlatform[] = []
  before(async () => {
    if (backend === 'postgres') {
      const scratch = await scratchPostgresDatabase({ migrated: true })
      storage = { overrides: { databaseUrl: scratch.url }, dispose: () => scratch.drop() }
    } else {
      const directory = mkdtempSync(join(tmpdir(), 'earshot-storage-'))
      storage = {
        overrides: { dataDir: join(directory, 'data') },
        dispose: async () => rmSync(directory, { recursive: true, force: true }),
      }
    }
  })
  after(async () => {
    for (const platform of running) await platform.stop()
    await storage?.dispose()
  })
  return {
    get overrides() {
      return storage.overrides
    },
    async start(overrides = {}) {
      const platform = await startTestPlatform(backend, { ...storage.overrides, ...overrides })
      running.push(platform)
      return platform
    },
  }
}

/** A platform started directly (not by startTestPlatform), typed as holding the break-glass key its config set. */
export function keyed<P extends RunningPlatform>(platform: P): P & { adminToken: string } {
  if (platform.adminToken === undefined)
    throw new Error('the platform was started without EARSHOT_ADMIN_TOKEN')
  return platform as P & { adminToken: string }
}
