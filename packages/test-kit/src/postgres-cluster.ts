import { execFile } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { closedPort } from './run-cli.js'

const run = promisify(execFile)

/**
 * A PostgreSQL server of a test's own — its own data directory, port and socket directory — for tests
 * that stop and restart the database without disturbing the server other tests use.
 */
export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string
  port: number
  /** `pg_ctl start`, waiting until it accepts connections. */
  start(): Promise<void>
  /** `pg_ctl stop -m <mode>` (fast: sessions are disconnected, a clean shutdown). */
  stop(mode?: 'smart' | 'fast' | 'immediate'): Promise<void>
  /** `pg_ctl restart -m <mode>`. */
  restart(mode?: 'smart' | 'fast' | 'immediate'): Promise<void>
  /** The server log so far. */
  log(): string
  /** Stops the server (immediately) and removes everything it wrote. */
  destroy(): Promise<void>
}

/** The newest /usr/lib/postgresql/<version>/bin, or EARSHOT_PG_BIN. */
export function postgresBinDir(): string | undefined {
  if (process.env.EARSHOT_PG_BIN) return process.env.EARSHOT_PG_BIN
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const version = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))[0]
  return version === undefined ? undefined : join(root, version, 'bin')
}

/**
 * initdb a new cluster in a temporary directory and start it on a free loopback port. initdb refuses to
 * run as root, so as root every server command runs as the `postgres` user (runuser), which then owns
 * the directory.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = postgresBinDir()
  if (!bin) throw new Error('no PostgreSQL server binaries (set EARSHOT_PG_BIN to their directory)')
  const root = mkdtempSync(join(tmpdir(), 'earshot-pg-cluster-'))
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim())
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim())
    chownSync(root, uid, gid)
  }
  chmodSync(root, 0o700)
  const data = join(root, 'data')
  const logFile = join(root, 'server.log')
  const command = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args)

  const port = await closedPort()
  const options = [
    `-p ${port}`,
    `-k ${root}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
  ].join(' ')
  try {
    await command('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '--no-instructions'])
  } catch (error) {
    rmSync(root, { recursive: true, force: true })
    throw error
  }
  const ctl = (args: string[]) => command('pg_ctl', ['-D', data, '-l', logFile, ...args])
  const cluster: PostgresCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await ctl(['start', '-w', '-t', '60', '-o', options])
    },
    async stop(mode = 'fast') {
      await ctl(['stop', '-w', '-t', '60', '-m', mode])
    },
    async restart(mode = 'fast') {
      await ctl(['restart', '-w', '-t', '60', '-m', mode, '-o', options])
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async destroy() {
      await ctl(['stop', '-w', '-m', 'immediate']).catch(() => {})
      rmSync(root, { recursive: true, force: true })
    },
  }
  try {
    await cluster.start()
  } catch (error) {
    await cluster.destroy()
    throw error
  }
  return cluster
}
