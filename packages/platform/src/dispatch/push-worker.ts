import { randomBytes } from 'node:crypto'
import pino from 'pino'
import type { PlatformConfig } from '../config/config.js'
import { redactSecrets } from '../http/log-redaction.js'
import { openMedia } from '../media/media-service.js'
import { openDatabase } from '../storage/open-database.js'
import { startDispatcher } from './dispatcher.js'

export interface PushWorker {
  claimant: string
  /** Stops the dispatcher (bounded by the shutdown grace) and closes the database. */
  close(): Promise<void>
}

/** A dispatcher on its own (`earshot worker`): pushes for the platform instances sharing its database. */
export async function startPushWorker(config: PlatformConfig): Promise<PushWorker> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    poolSize: config.databasePoolSize,
    dataDir: config.dataDir === 'memory://' ? undefined : config.dataDir,
  })
  const logger = pino(
    { level: config.logLevel, base: { component: 'push-worker' }, hooks: { streamWrite: redactSecrets } },
    pino.destination(2),
  )
  try {
    // Without EARSHOT_PUBLIC_URL, links point at this host's partner port.
    const media = await openMedia(config, db, Date.now, randomBytes)
    media.publicUrl = config.publicUrl ?? `http://localhost:${config.port}`
    const dispatcher = await startDispatcher({
      db,
      settings: config,
      logger,
      randomBytes,
      audioLinks: (enterpriseId) => media.audioLinks(enterpriseId),
    })
    return {
      claimant: dispatcher.claimant,
      async close() {
        await dispatcher.stop(config.shutdownGraceSeconds * 1000)
        await db.close()
        await media.close()
      },
    }
  } catch (error) {
    await db.close()
    throw error
  }
}
