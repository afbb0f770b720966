import { randomBytes } from 'node:crypto'
import pino from 'pino'
import type { PlatformConfig } from '../config/config.js'
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
  const logger = pino({ level: config.logLevel, base: { component: 'push-worker' } }, pino.destination(2))
  try {
    const dispatcher = await startDispatcher({ db, settings: config, logger, randomBytes })
    return {
      claimant: dispatcher.claimant,
      async close() {
        await dispatcher.stop(config.shutdownGraceSeconds * 1000)
        await db.close()
      },
    }
  } catch (error) {
    await db.close()
    throw error
  }
}
