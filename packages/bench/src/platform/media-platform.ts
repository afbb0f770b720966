/**
 * Child process of `media.bench.ts`: the platform as `earshot serve` runs it, configured from the
 * environment (the bench sets the PGlite data directory, the media directory, loopback ports, the admin
 * token, EARSHOT_RATE_LIMIT=0, EARSHOT_LOG_LEVEL=warn and EARSHOT_PUSH_DISPATCH=0). Reports its URLs,
 * its database's version and where it stores audio; answers "gc" with its garbage collections so far.
 *
 * "profile-start" starts V8's CPU profiler on the main thread (the sampler `--cpu-prof` uses, through the
 * inspector, so that the process measured is the one profiled, in the state it was measured in, rather
 * than one started afresh); "profile-stop" writes the profile to BENCH_MEDIA_PROFILE_DIR and answers its path.
 */
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import { loadConfig, startPlatform } from '@earshot/platform'
import { serveParent } from '../child.js'
import { answerGcCounts } from './gc-counter.js'

export interface ProfileWritten {
  type: 'profiled'
  path: string
}

export interface MediaPlatformReady {
  type: 'ready'
  partnerUrl: string
  adminUrl: string
  adminToken: string
  databaseVersion: string
  store: string
}

answerGcCounts()
const platform = await startPlatform({ config: loadConfig(process.env) })
const { db, media } = platform.context
const [version] = await db.query<{ version: string }>('SELECT version()')

let profiles = 0
let session: Session | undefined
process.on('message', async (message: { type?: string }) => {
  if (message.type === 'profile-start') {
    session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 1000 })
    await session.post('Profiler.start')
    process.send?.({ type: 'profiling' })
  } else if (message.type === 'profile-stop' && session) {
    const { profile } = await session.post('Profiler.stop')
    session.disconnect()
    session = undefined
    const path = join(
      process.env.BENCH_MEDIA_PROFILE_DIR ?? '.',
      `platform-${process.pid}-${++profiles}.cpuprofile`,
    )
    writeFileSync(path, JSON.stringify(profile))
    process.send?.({ type: 'profiled', path } satisfies ProfileWritten)
  }
})

serveParent(
  {
    partnerUrl: platform.partnerUrl,
    adminUrl: platform.adminUrl,
    adminToken: platform.adminToken,
    databaseVersion: version?.version ?? 'unknown',
    store: media.store.description,
  } satisfies Omit<MediaPlatformReady, 'type'>,
  () => platform.close(),
)
