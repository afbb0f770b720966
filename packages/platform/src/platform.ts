import { hostname } from 'node:os'
import { randomBytes as systemRandomBytes } from '@earshot/protocol'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { forgetStaleSignIns } from './access/access-upkeep.js'
import { firstOwnerSetupUrl } from './access/operator-store.js'
import { pruneAuditTrail } from './audit/audit-trail.js'
import { accessTokens } from './auth/access-tokens.js'
import { credentialCache, listenForCredentialChanges } from './auth/credential-cache.js'
import { loadEnterpriseKey } from './auth/credentials.js'
import { forgetExpiredNonces, nonceGuard } from './auth/replay-guard.js'
import { tokenSigningKey } from './auth/token-signing-key.js'
import { registerFeedLagMetric, watchFeedLag } from './changes/feed-lag.js'
import { adoptRestoredChanges } from './changes/restored-changes.js'
import type { PlatformConfig } from './config/config.js'
import type { LogDestination, PlatformContext } from './context/platform-context.js'
import { deliveriesOfRecordings } from './deliveries/deliveries-of-recordings.js'
import { pruneConfirmedDeliveries } from './deliveries/delivery-store.js'
import { type Dispatcher, startDispatcher } from './dispatch/dispatcher.js'
import { registerPushMetrics } from './dispatch/push-metrics.js'
import { addFirstEndpoint } from './endpoints/endpoint-store.js'
import { startErasureRunner } from './erasures/erasure-runner.js'
import { erasureSigningKey } from './erasures/erasure-signing-key.js'
import { startRetention } from './erasures/retention.js'
import { type Lifecycle, type RouteSummary, registeredRoutes } from './http/create-server.js'
import { buildAdminApi } from './listeners/admin-listener.js'
import { buildPartnerApi } from './listeners/partner-listener.js'
import { openMedia } from './media/media-service.js'
import { tendMedia } from './media/media-upkeep.js'
import { createMetrics } from './metrics/metrics.js'
import { prunePortal } from './portal/portal-sessions.js'
import type { Database } from './storage/database.js'
import { openDatabase } from './storage/open-database.js'
import { keepDatabaseTended } from './storage/upkeep.js'

export interface PlatformOptions {
  config: PlatformConfig
  /** Epoch milliseconds; tests inject a clock they can move. */
  clock?: () => number
  randomBytes?: (size: number) => Buffer
  /** Where the JSON log lines go; stderr by default (stdout is the CLI's). */
  logDestination?: LogDestination
  /** A database already open, used (and closed) instead of the configured one: tests lend copies of one migrated. */
  database?: Database
}

export interface RunningPlatform {
  partnerUrl: string
  adminUrl: string
  /** The break-glass owner key (EARSHOT_ADMIN_TOKEN), when set. */
  adminToken: string | undefined
  /** While no owner can sign in: the one-time link that sets up the first one. */
  setupUrl: string | undefined
  context: PlatformContext
  /** The routes each listener serves, for the test that checks they are all documented. */
  routes: { partner: readonly RouteSummary[]; admin: readonly RouteSummary[] }
  /** Stops taking requests, finishes those in flight (bounded by the shutdown grace), closes storage. */
  close(): Promise<void>
}

const JANITOR_INTERVAL_MS = 10 * 60 * 1000

export async function startPlatform({
  config,
  clock = Date.now,
  randomBytes = systemRandomBytes,
  logDestination = process.stderr,
  database,
}: PlatformOptions): Promise<RunningPlatform> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    poolSize: config.databasePoolSize,
    dataDir: config.dataDir === 'memory://' ? undefined : config.dataDir,
    database,
  })
  const servers: FastifyInstance[] = []
  let stopListening: (() => Promise<void>) | undefined
  let closeMedia: (() => Promise<void>) | undefined
  try {
    const credentials = credentialCache({
      load: (enterpriseId, keyVersion) => loadEnterpriseKey(db, enterpriseId, keyVersion),
    })
    stopListening = await listenForCredentialChanges(db, credentials)
    const media = await openMedia(config, db, clock, randomBytes)
    closeMedia = () => media.close()
    await media.watchChanges(db)
    let wakeErasures = () => {}
    const metrics = createMetrics()
    registerFeedLagMetric(metrics.registry, db)
    const pushMetrics = registerPushMetrics(metrics.registry, db)
    const context: PlatformContext = {
      config,
      db,
      tokens: accessTokens(await tokenSigningKey(db, randomBytes)),
      credentials,
      acceptNonce: nonceGuard(db),
      clock,
      randomBytes,
      metrics,
      recordingEvents: deliveriesOfRecordings,
      firstEndpoint: addFirstEndpoint,
      media,
      erasures: { key: await erasureSigningKey(db), wake: () => wakeErasures() },
      logDestination,
    }
    const lifecycle: Lifecycle = { shuttingDown: false }

    const partner = await buildPartnerApi(context, lifecycle)
    servers.push(partner)
    const admin = await buildAdminApi(context, lifecycle, {
      db,
      clock,
      breakGlassToken: config.adminToken,
      sessions: { idleSeconds: config.sessionIdleSeconds, maxSeconds: config.sessionMaxSeconds },
    })
    servers.push(admin)
    const partnerUrl = await partner.listen({ host: config.host, port: config.port })
    const adminUrl = await admin.listen({ host: config.adminHost, port: config.adminPort })
    media.publicUrl = config.publicUrl ?? partnerUrl
    const dispatcher: Dispatcher | undefined = config.pushDispatch
      ? await startDispatcher({
          db,
          settings: config,
          logger: partner.log.child({ component: 'push' }),
          metrics: pushMetrics,
          clock,
          randomBytes,
          audioLinks: (enterpriseId) => media.audioLinks(enterpriseId),
        })
      : undefined

    const chores = await startChores(context, partner.log)
    wakeErasures = chores.wakeErasures

    let closing: Promise<void> | undefined
    return {
      partnerUrl,
      adminUrl,
      adminToken: config.adminToken,
      setupUrl: await firstOwnerSetupUrl(db, adminUrl, clock, randomBytes),
      context,
      routes: { partner: registeredRoutes(partner), admin: registeredRoutes(admin) },
      close: () => {
        closing ??= (async () => {
          lifecycle.shuttingDown = true
          const graceMs = config.shutdownGraceSeconds * 1000
          // All at once: the dispatcher starts no attempt once the shutdown has begun.
          await Promise.all([chores.stop(), closeWithin(servers, graceMs), dispatcher?.stop(graceMs)])
          await stopListening?.().catch(() => {})
          await media.close()
          await db.close()
        })()
        return closing
      },
    }
  } catch (error) {
    await Promise.allSettled(servers.map((server) => server.close()))
    await stopListening?.().catch(() => {})
    await closeMedia?.()
    await db.close()
    throw error
  }
}

/**
 * What runs beside the requests, once changes a restored database brought from another server are ready
 * to be numbered: bounded growth (expired nonces and old confirmed deliveries go, a short
 * statement at a time), database upkeep, the feed's lag watch, and removing stored audio no longer named.
 */
async function startChores(
  context: PlatformContext,
  log: FastifyBaseLogger,
): Promise<{ stop(): Promise<void>; wakeErasures(): void }> {
  const { db, config, clock, media } = context
  const restored = await adoptRestoredChanges(db)
  if (restored > 0) {
    log
      .child({ component: 'changes' })
      .info({ changes: restored }, 'changes queued on another PostgreSQL server are numbered in the feed now')
  }
  const janitor = setInterval(() => {
    forgetExpiredNonces(db, clock()).catch((error: unknown) =>
      log.warn({ err: error }, 'nonce cleanup failed'),
    )
    pruneDeliveries(db, config.deliveryRetentionSeconds).catch((error: unknown) =>
      log.warn({ err: error }, 'delivery pruning failed'),
    )
    pruneAuditTrail(db, clock, config.auditRetentionDays).catch((error: unknown) =>
      log.warn({ err: error }, 'audit trail pruning failed'),
    )
    forgetStaleSignIns(db, clock(), config.sessionMaxSeconds).catch((error: unknown) =>
      log.warn({ err: error }, 'sign-in cleanup failed'),
    )
    prunePortal(db, clock()).catch((error: unknown) => log.warn({ err: error }, 'portal cleanup failed'))
  }, JANITOR_INTERVAL_MS)
  janitor.unref()
  const upkeep = await keepDatabaseTended(db, log.child({ component: 'storage' }))
  const feedWatch = watchFeedLag(db, log.child({ component: 'changes' }))
  const mediaUpkeep = await tendMedia(
    db,
    media.store,
    { clock, claimGraceSeconds: config.mediaUploadGraceSeconds },
    log.child({ component: 'media' }),
  )
  const erasures = startErasureWork(context, log.child({ component: 'erasures' }))
  return {
    wakeErasures: erasures.wake,
    async stop() {
      clearInterval(janitor)
      await erasures.stop()
      feedWatch.stop()
      await upkeep.stop()
      await mediaUpkeep.stop()
    },
  }
}

/** This instance's erasure runner and its look for retention policies that are due. */
function startErasureWork(
  context: PlatformContext,
  log: FastifyBaseLogger,
): { wake(): void; stop(): Promise<void> } {
  const runner = startErasureRunner({
    db: context.db,
    events: context.recordingEvents,
    log,
    runner: `${hostname()}:${process.pid}:${context.randomBytes(6).toString('hex')}`,
    batchSize: context.config.erasureBatch,
    perSecond: context.config.erasureRate,
    leaseMs: context.config.erasureLeaseSeconds * 1000,
  })
  const retention = startRetention({ db: context.db, clock: context.clock, log, onStarted: runner.wake })
  retention.wake()
  return {
    wake() {
      retention.wake()
      runner.wake()
    },
    async stop() {
      await retention.stop()
      await runner.stop()
    },
  }
}

/** Lets in-flight requests finish, but no longer than the grace period; then connections are cut. */
async function closeWithin(servers: FastifyInstance[], graceMs: number): Promise<void> {
  const timer = setTimeout(() => {
    for (const server of servers) server.server.closeAllConnections()
  }, graceMs)
  try {
    await Promise.all(servers.map((server) => server.close()))
  } finally {
    clearTimeout(timer)
  }
}

async function pruneDeliveries(db: Database, retentionSeconds: number): Promise<void> {
  const batch = 1000
  while ((await pruneConfirmedDeliveries(db, retentionSeconds, batch)) === batch) {}
}
