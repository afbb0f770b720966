/**
 * A platform in a child process, for tests that kill it: configured from the environment like
 * `earshot serve`, it prints one JSON line {partnerUrl, adminUrl, adminToken, pid} once listening.
 */
import { loadConfig, startPlatform } from '@earshot/platform'

const platform = await startPlatform({ config: loadConfig(process.env) })
process.stdout.write(
  `${JSON.stringify({ partnerUrl: platform.partnerUrl, adminUrl: platform.adminUrl, adminToken: platform.adminToken, pid: process.pid })}\n`,
)
process.on('SIGTERM', () => {
  platform.close().then(() => process.exit(0))
})
