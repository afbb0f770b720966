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
import { loadConfig, startPlatform } from '@earshot/platform'
import { TEST_ADMIN_TOKEN } from '@earshot/test-kit/backends'
import { serveParent } from '../child.js'
import { answerProfileRequests } from './child-profiler.js'
import { answerGcCounts } from './gc-counter.js'

export interface MediaPlatformReady {
  type: 'ready'
  partnerUrl: string
  adminUrl: string
  adminToken: string
  databaseVersion: string
  store: string
}

answerGcCounts()
const config = { ...loadConfig(process.env), adminToken: process.env.EARSHOT_ADMIN_TOKEN ?? TEST_ADMIN_TOKEN }
const platform = await startPlatform({ config })
const { db, media } = platform.context
const [version] = await db.query<{ version: string }>('SELECT version()')

answerProfileRequests(process.env.BENCH_MEDIA_PROFILE_DIR ?? '.')

serveParent(
  {
    partnerUrl: platform.partnerUrl,
    adminUrl: platform.adminUrl,
    adminToken: config.adminToken,
    databaseVersion: version?.version ?? 'unknown',
    store: media.store.description,
  } satisfies Omit<MediaPlatformReady, 'type'>,
  () => platform.close(),
)
