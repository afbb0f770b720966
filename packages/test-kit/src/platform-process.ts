/**
 * A platform in a child process, for tests that kill it and for the other kits' suites: configured from the
 * environment like `earshot serve`, with the tests' break-glass key unless EARSHOT_ADMIN_TOKEN gives one,
 * it prints one JSON line {partnerUrl, adminUrl, adminToken, pid} once listening. An in-memory database
 * starts as a copy of the migrated image the in-process test platforms start from, a new data directory as a
 * copy of an initialized one.
 */
import { loadConfig, startPlatform } from '@earshot/platform'
import { openPglite } from '@earshot/support/storage'
import { TEST_ADMIN_TOKEN } from './admin-token.js'
import { preparePglite } from './pglite-image.js'

const config = loadConfig({ EARSHOT_ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...process.env })
const image = await preparePglite(config)
const database = image === undefined ? undefined : await openPglite(undefined, { image })
const platform = await startPlatform({ config, database })
process.stdout.write(
  `${JSON.stringify({ partnerUrl: platform.partnerUrl, adminUrl: platform.adminUrl, adminToken: config.adminToken, pid: process.pid })}\n`,
)
process.on('SIGTERM', () => {
  platform.close().then(() => process.exit(0))
})
