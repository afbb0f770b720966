import { chmod, stat, writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { Command } from 'commander'
import { DEFAULT_ADMIN_URL } from '../admin-client/admin-client.js'
import { ConfigError, configEnvironment, loadConfig, type PlatformConfig } from '../config/config.js'
import type { RunningPlatform } from '../platform.js'

const DEFAULT_PARTNER_URL = 'http://127.0.0.1:8080'

interface ServeFlags {
  host?: string
  port?: string
  adminHost?: string
  adminPort?: string
  dataDir?: string
  databaseUrl?: string
  tokenTtl?: string
  demo?: boolean
}

/** `earshot serve`: runs the platform until SIGINT or SIGTERM. */
export function serveCommand(): Command {
  return new Command('serve')
    .description('run the platform: the partner API and the admin API')
    .option('--host <host>', 'partner API host (EARSHOT_HOST)')
    .option('--port <port>', 'partner API port (EARSHOT_PORT)')
    .option('--admin-host <host>', 'admin API host (EARSHOT_ADMIN_HOST)')
    .option('--admin-port <port>', 'admin API port (EARSHOT_ADMIN_PORT)')
    .option('--data-dir <dir>', 'embedded database directory, or memory:// (EARSHOT_DATA_DIR)')
    .option('--database-url <url>', 'PostgreSQL instead of the embedded database (DATABASE_URL)')
    .option('--token-ttl <seconds>', 'access token lifetime in seconds (EARSHOT_TOKEN_TTL)')
    .option('--demo', 'on a fresh database, create a demo enterprise with sample recordings (EARSHOT_DEMO)')
    .addHelpText('after', environmentHelp)
    .action(async (flags: ServeFlags, command: Command) => {
      const adminToken =
        command.parent?.getOptionValueSource('adminToken') === 'cli'
          ? (command.parent.opts<{ adminToken?: string }>().adminToken ?? undefined)
          : undefined
      await serve(flags, adminToken)
    })
}

/** The configuration from the environment and flags; on a wrong value, says which and exits 2. */
export function loadConfigOrExit(flags: Partial<Record<keyof PlatformConfig, string>>): PlatformConfig {
  try {
    return loadConfig(process.env, flags)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(2)
  }
}

export function environmentHelp(): string {
  const width = Math.max(...configEnvironment.map(({ env }) => env.length))
  return [
    '',
    'Environment variables (flags take precedence):',
    ...configEnvironment.map(({ env, rule }) => `  ${env.padEnd(width)}  ${rule}`),
  ].join('\n')
}

async function serve(flags: ServeFlags, adminToken: string | undefined): Promise<void> {
  const config = loadConfigOrExit({
    host: flags.host,
    port: flags.port,
    adminHost: flags.adminHost,
    adminPort: flags.adminPort,
    dataDir: flags.dataDir,
    databaseUrl: flags.databaseUrl,
    tokenTtlSeconds: flags.tokenTtl,
    adminToken,
    ...(flags.demo && { demo: 'true' }),
  })

  let running: RunningPlatform | undefined
  const startup = (async () => {
    running = await startOrExit(config)
    printListening(running)
    if (config.demo) await demoOrExit(running, config)
    printAccess(running)
  })()
  // Registered before the (slow) start: a signal during it stops the platform once it has started.
  const stopping = stopOnSignals(async () => {
    await startup
    await running?.close()
  })
  await startup
  if (!stopping()) process.stdout.write('\nPress Ctrl+C to stop.\n')
}

async function startOrExit(config: PlatformConfig): Promise<RunningPlatform> {
  try {
    // Loaded here, not at the top: the client commands start fast without the server's modules.
    const { startPlatform } = await import('../platform.js')
    return await startPlatform({ config })
  } catch (error) {
    // startPlatform closed whatever it had opened (listeners, database, lock) before throwing.
    const explained = portInUse(error, config)
    process.stderr.write(`earshot serve could not start: ${explained ?? (error as Error).message}\n`)
    process.exit(1)
  }
}

/**
 * A listener's EADDRINUSE in words: which port, of which API, and the flag and variable that move it;
 * undefined for any other error.
 */
export function portInUse(
  error: unknown,
  config: Pick<PlatformConfig, 'host' | 'port' | 'adminHost' | 'adminPort'>,
): string | undefined {
  const { code, syscall, port } = error as { code?: unknown; syscall?: unknown; port?: unknown }
  if (code !== 'EADDRINUSE' || syscall !== 'listen' || typeof port !== 'number') return undefined
  const partner = { name: 'partner API', host: config.host, flag: '--port', env: 'EARSHOT_PORT' }
  const admin = { name: 'admin API', host: config.adminHost, flag: '--admin-port', env: 'EARSHOT_ADMIN_PORT' }
  if (port === config.port && port === config.adminPort) {
    return (
      `port ${port} is already in use: the partner API and the admin API are both set to it. ` +
      `Give each its own free port: ${partner.flag} <port> or ${partner.env}, ` +
      `${admin.flag} <port> or ${admin.env}.`
    )
  }
  const api = port === config.adminPort ? admin : port === config.port ? partner : undefined
  if (!api) return undefined
  return [
    `port ${port} (the ${api.name}, on ${api.host}) is already in use.`,
    'Another program is listening on it, perhaps an earlier `earshot serve` or `npm start` still running:',
    `stop it, or give the ${api.name} another port with ${api.flag} <port> or ${api.env}.`,
  ].join('\n')
}

function printListening(running: RunningPlatform): void {
  const lines = [
    'Earshot is running.',
    `  Partner API: ${running.partnerUrl}`,
    `  Admin API:   ${running.adminUrl}`,
    `  Console:     ${running.adminUrl}/console/`,
  ]
  if (running.adminUrl !== DEFAULT_ADMIN_URL) {
    lines.push(
      '',
      'Point the CLI at the admin API in another shell:',
      `  export EARSHOT_URL=${running.adminUrl}`,
    )
  }
  process.stdout.write(`${lines.join('\n')}\n`)
}

/**
 * How to get in, printed last (after the demo's lines) so that it is what a newcomer reads first: the first
 * owner's setup link while no owner exists, then an API key for the CLI; and whether the break-glass key
 * is on.
 */
function printAccess(running: RunningPlatform): void {
  const lines: string[] = []
  if (running.setupUrl) {
    lines.push(
      '',
      'No owner has signed in yet. Open this one-time link to set up the first owner (valid 24 h; a new one',
      'is printed at every start until an owner exists):',
      `  ${running.setupUrl}`,
      "Then create an API key for the CLI in the console's Keys screen, and in another shell:",
      '  export EARSHOT_API_KEY=<the key>',
      '  npx earshot enterprise list',
    )
  }
  if (running.adminToken !== undefined) {
    lines.push(
      '',
      'EARSHOT_ADMIN_TOKEN is set: it opens every admin route as the break-glass owner key, each use audited.',
      'Unset it once operators sign in and scripts use API keys.',
    )
  }
  if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`)
}

async function demoOrExit(running: RunningPlatform, config: PlatformConfig): Promise<void> {
  try {
    process.stdout.write(`\n${(await demo(running, config)).join('\n')}\n`)
  } catch (error) {
    process.stderr.write(`the demo data could not be created: ${(error as Error).message}\n`)
    await running.close().catch(() => {})
    process.exit(1)
  }
}

/** Seeds the demo enterprise on a fresh database; returns the lines telling the user how to use it. */
async function demo(running: RunningPlatform, config: PlatformConfig): Promise<string[]> {
  const embedded = config.dataDir !== 'memory://' && config.databaseUrl === undefined
  const file = embedded ? resolve(config.dataDir, '..', 'demo-credentials.json') : undefined
  const { seedDemoIfEmpty } = await import('../demo/demo-seed.js')
  const credentials = await seedDemoIfEmpty(running.context, Date.now())
  if (!credentials) {
    const fileExists = file !== undefined && (await stat(file).catch(() => undefined)) !== undefined
    return [
      fileExists
        ? `The demo enterprise exists already; its credentials are in ${file}`
        : 'The database already has enterprises, so no demo enterprise was created.',
    ]
  }
  const { enterpriseId, keyVersion, secret } = credentials
  if (file) {
    await writeFile(file, `${JSON.stringify({ enterpriseId, keyVersion, secret }, null, 2)}\n`, {
      mode: 0o600,
    })
    await chmod(file, 0o600) // writeFile's mode applies only to a new file
  }
  const baseUrl = running.partnerUrl === DEFAULT_PARTNER_URL ? '' : `EARSHOT_BASE_URL=${running.partnerUrl} `
  return [
    'Demo enterprise created with sample recordings:',
    `  enterpriseId: ${enterpriseId}`,
    `  keyVersion:   ${keyVersion}`,
    `  secret:       ${secret}`,
    ...(file ? [`(saved to ${file})`] : []),
    '',
    'Run a first query from the repository root, in another shell:',
    `  ${baseUrl}EARSHOT_ENTERPRISE_ID=${enterpriseId} EARSHOT_SECRET='${secret}' node examples/first-query.mjs`,
    ...(config.pushAllowPrivate
      ? ['', 'Pushes may go to loopback and private addresses: a partner receiver on this machine works.']
      : []),
  ]
}

/**
 * A signal repeated within this long is one signal delivered twice, not an operator asking again: Ctrl+C in
 * a terminal reaches `npm start`'s server both from the terminal and forwarded by npm (npm/cli#5021), and a
 * supervisor may signal npm and the server together.
 */
export const REPEATED_SIGNAL_MS = 1000

/**
 * SIGINT/SIGTERM: stop taking requests, finish those in flight, close storage, exit 0. The same signal again
 * after REPEATED_SIGNAL_MS, or the other one: exit now.
 */
export function stopOnSignals(stop: () => Promise<void>): () => boolean {
  let first: { signal: NodeJS.Signals; at: number } | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    const at = performance.now()
    if (first) {
      if (signal === first.signal && at - first.at < REPEATED_SIGNAL_MS) return
      process.stderr.write(`${signal} again: exiting now\n`)
      process.exit(1)
    }
    first = { signal, at }
    process.stderr.write(`${signal}: shutting down (send it again to exit at once)\n`)
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${(error as Error).message}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return () => first !== undefined
}
