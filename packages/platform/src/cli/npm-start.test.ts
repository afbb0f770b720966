import assert from 'node:assert/strict'
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startCliProcess } from '@earshot/test-kit/cli-process'
import { eventually } from '@earshot/test-kit/eventually'
import { cleanEnv, closedPort, isPortFree } from '@earshot/test-kit/run-cli'

/*
 * `npm start` as a developer runs it, in the repository: the root package.json's script itself (its build
 * included), on a scratch data directory and free ports. It prints the first owner's setup link last, at
 * every start until an owner exists. Stopping npm must stop the server: SIGTERM sent
 * to npm alone (a supervisor, `kill <npm's pid>`), which npm forwards to its script's process, and Ctrl+C
 * in a terminal, which signals npm and the server together (and npm forwards it once more). Afterwards no
 * process of the tree is left, both ports are free and the data directory is unlocked.
 */

const root = fileURLToPath(new URL('../../../../', import.meta.url))
const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))
/** The build (`tsc -b`, up to date: about a second) and a fresh database with the demo's 300 recordings. */
const STARTED_MS = 180_000

interface NpmStart {
  npm: ChildProcessWithoutNullStreams
  output(): string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  waitFor(text: string): Promise<void>
}

/** `npm start` in the repository, in a process group of its own (as a terminal's foreground job). */
function npmStart(env: Record<string, string>): NpmStart {
  const npm = spawn('npm', ['start'], {
    cwd: root,
    env: cleanEnv({ ...env, npm_config_update_notifier: 'false' }),
    detached: true,
  })
  let output = ''
  const watchers = new Set<() => void>()
  const collect = (chunk: Buffer) => {
    output += chunk
    for (const watcher of watchers) watcher()
  }
  npm.stdout.on('data', collect)
  npm.stderr.on('data', collect)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return {
    npm,
    output: () => output,
    exited,
    waitFor: (text) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => finish(new Error(`no "${text}" in ${STARTED_MS} ms:\n${output}`)),
          STARTED_MS,
        )
        const finish = (error?: Error) => {
          clearTimeout(timer)
          watchers.delete(watcher)
          if (error) reject(error)
          else resolve()
        }
        const watcher = () => {
          if (output.includes(text)) finish()
        }
        watchers.add(watcher)
        void exited.then(({ code, signal }) =>
          finish(new Error(`npm start ended (${code ?? signal}):\n${output}`)),
        )
        watcher()
      }),
  }
}

/** True while any process of the group is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
    throw error
  }
}

/** The server's pid, from its log lines (pino writes it on each). */
function serverPid(output: string): number {
  const pid = Number(/"pid":(\d+)/.exec(output)?.[1])
  assert.ok(pid > 0, `the server logged its pid:\n${output}`)
  return pid
}

describe('npm start', { skip: process.platform === 'win32' && 'POSIX signals', timeout: 600_000 }, () => {
  let dir: string
  let dataDir: string
  let env: Record<string, string>
  let ports: number[]
  const started: NpmStart[] = []

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'earshot-npm-start-'))
    dataDir = join(dir, 'data')
    ports = [await closedPort(), await closedPort()]
    env = {
      EARSHOT_DATA_DIR: dataDir,
      EARSHOT_PORT: String(ports[0]),
      EARSHOT_ADMIN_PORT: String(ports[1]),
    }
  })

  after(async () => {
    for (const { npm } of started) {
      if (npm.pid && groupAlive(npm.pid)) process.kill(-npm.pid, 'SIGKILL')
    }
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  /** After npm's exit: no process of its tree, both ports free, the data directory unlocked. */
  async function nothingLeft(run: NpmStart): Promise<void> {
    const pgid = run.npm.pid as number
    await eventually(async () => !groupAlive(pgid), 5_000, 'every process of npm start gone')
    const pid = serverPid(run.output())
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `the server (pid ${pid}) is gone`)
    for (const port of ports) assert.ok(await isPortFree(port), `port ${port} is free`)
    assert.ok(!existsSync(`${dataDir}.lock`), 'the data directory is unlocked')
  }

  test('SIGTERM to npm alone stops the server: the tree exits, the ports and the data directory are free', async () => {
    const run = npmStart(env)
    started.push(run)
    await run.waitFor('Earshot is running.')
    const pid = serverPid(run.output())
    assert.notEqual(pid, run.npm.pid)

    run.npm.kill('SIGTERM')
    assert.deepEqual(await run.exited, { code: 0, signal: null }, run.output())
    assert.match(run.output(), /SIGTERM: shutting down/)
    assert.doesNotMatch(run.output(), /exiting now/)
    await nothingLeft(run)
    assert.ok(existsSync(join(dir, 'demo-credentials.json')), 'the demo was created first')
    // What to do next comes last: the first owner's setup link, then an API key for the CLI.
    assert.match(
      run.output(),
      /Run a first query[\s\S]*set up the first owner[\s\S]*\n {2}http:\/\/127\.0\.0\.1:\d+\/console\/#setup=\S+\n[\s\S]*export EARSHOT_API_KEY=<the key>\n/,
    )
    assert.doesNotMatch(run.output(), /EARSHOT_ADMIN_TOKEN/, 'no break-glass token is made up')

    // A second platform takes the same data directory and ports at once.
    const second = startCliProcess(cli, ['serve'], { ...env, EARSHOT_LOG_LEVEL: 'warn' })
    try {
      await second.waitForOutput('Earshot is running', ({ stdout }) => stdout.includes('Earshot is running.'))
      second.child.kill('SIGTERM')
      assert.equal(await second.exited, 0, second.stderr())
    } finally {
      await second.kill()
    }
  })

  test('Ctrl+C (SIGINT to the whole group, and again from npm) is one graceful shutdown, exit 0', async () => {
    const run = npmStart(env)
    started.push(run)
    await run.waitFor('Press Ctrl+C to stop.')
    assert.match(run.output(), /The demo enterprise exists already/)
    assert.match(run.output(), /#setup=\S+\n/, 'the setup link again: no owner exists yet')

    process.kill(-(run.npm.pid as number), 'SIGINT')
    assert.deepEqual(await run.exited, { code: 0, signal: null }, run.output())
    assert.match(run.output(), /SIGINT: shutting down/)
    assert.doesNotMatch(run.output(), /exiting now/, 'the copy npm forwards is not taken for a second Ctrl+C')
    await nothingLeft(run)
  })

  test('the root package.json runs the server in place of the shell (exec), so that npm signals it', async () => {
    const { scripts } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>
    }
    assert.match(scripts.start ?? '', /&& exec node packages\/platform\/dist\/cli\/earshot\.js serve --demo$/)
  })
})
