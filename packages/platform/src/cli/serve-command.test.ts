import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { type CliProcess, startCliProcess } from '@earshot/test-kit/cli-process'
import { seedPgliteDataDir } from '@earshot/test-kit/pglite-image'
import { RawConnection } from '@earshot/test-kit/raw-connection'
import { closedPort, isPortFree, runCli } from '@earshot/test-kit/run-cli'
import { portInUse } from './serve-command.js'

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

/** A loopback port held by another program until `close`. */
async function holdPort(): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

describe('earshot serve: a port in use', { concurrency: true, timeout: 120_000 }, () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'earshot-port-in-use-'))
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  test('the partner port (--port): named with its flag and variable, exit 1, nothing left running', async () => {
    const held = await holdPort()
    try {
      const adminPort = await closedPort()
      const dataDir = join(dir, 'partner-port')
      await seedPgliteDataDir(dataDir, { migrated: true })
      const result = await runCli(
        cli,
        ['serve', '--port', String(held.port), '--admin-port', String(adminPort), '--data-dir', dataDir],
        { EARSHOT_LOG_LEVEL: 'warn' },
      )
      assert.equal(result.code, 1, result.stderr)
      assert.equal(result.stdout, '', 'never said it was running')
      assert.equal(
        result.stderr,
        `earshot serve could not start: port ${held.port} (the partner API, on 127.0.0.1) is already in use.\n` +
          'Another program is listening on it, perhaps an earlier `earshot serve` or `npm start` still running:\n' +
          'stop it, or give the partner API another port with --port <port> or EARSHOT_PORT.\n',
      )
      assert.ok(await isPortFree(adminPort), 'the admin port is not held')
      assert.ok(!existsSync(`${dataDir}.lock`), 'the data directory is not locked')
    } finally {
      await held.close()
    }
  })

  test('the admin port (EARSHOT_ADMIN_PORT): named with its flag and variable; the partner listener closed', async () => {
    const held = await holdPort()
    try {
      const port = await closedPort()
      const dataDir = join(dir, 'admin-port')
      await seedPgliteDataDir(dataDir, { migrated: true })
      const result = await runCli(cli, ['serve'], {
        EARSHOT_PORT: String(port),
        EARSHOT_ADMIN_PORT: String(held.port),
        EARSHOT_DATA_DIR: dataDir,
        EARSHOT_LOG_LEVEL: 'warn',
      })
      assert.equal(result.code, 1, result.stderr)
      assert.equal(result.stdout, '')
      assert.match(
        result.stderr,
        new RegExp(
          `^earshot serve could not start: port ${held.port} \\(the admin API, on 127\\.0\\.0\\.1\\)`,
        ),
      )
      assert.match(result.stderr, /with --admin-port <port> or EARSHOT_ADMIN_PORT\.\n$/)
      assert.ok(await isPortFree(port), 'the partner listener, started first, was closed')
      assert.ok(!existsSync(`${dataDir}.lock`), 'the data directory is not locked')
      // The same data directory serves at once: nothing of the failed start holds it.
      const again = await runCli(cli, ['serve', '--port', String(held.port), '--admin-port', '0'], {
        EARSHOT_DATA_DIR: dataDir,
        EARSHOT_LOG_LEVEL: 'warn',
      })
      assert.match(again.stderr, /the partner API, on 127\.0\.0\.1\) is already in use/)
      assert.doesNotMatch(again.stderr, /in use by another Earshot process/)
    } finally {
      await held.close()
    }
  })

  test('both APIs given one port: says so, and names both flags', () => {
    const config = { host: '127.0.0.1', port: 9000, adminHost: '127.0.0.1', adminPort: 9000 }
    const error = Object.assign(new Error('listen EADDRINUSE'), {
      code: 'EADDRINUSE',
      syscall: 'listen',
      port: 9000,
    })
    assert.equal(
      portInUse(error, config),
      'port 9000 is already in use: the partner API and the admin API are both set to it. ' +
        'Give each its own free port: --port <port> or EARSHOT_PORT, --admin-port <port> or EARSHOT_ADMIN_PORT.',
    )
    // Anything else is left to the error's own message.
    assert.equal(portInUse(new Error('boom'), config), undefined)
    assert.equal(portInUse({ ...error, syscall: 'connect' }, config), undefined)
  })
})

describe('earshot serve: signals', { concurrency: true, timeout: 120_000 }, () => {
  const dirs: string[] = []
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })

  /**
   * A server whose shutdown lasts: a partner request whose body never ends keeps it waiting for the
   * shutdown grace (3 s) before its connection is closed.
   */
  async function busyServer(): Promise<{ serve: CliProcess; connection: RawConnection }> {
    const dir = await mkdtemp(join(tmpdir(), 'earshot-serve-signals-'))
    dirs.push(dir)
    const dataDir = join(dir, 'data')
    await seedPgliteDataDir(dataDir, { migrated: true })
    const serve = startCliProcess(cli, ['serve', '--port', '0', '--admin-port', '0'], {
      EARSHOT_DATA_DIR: dataDir,
      EARSHOT_SHUTDOWN_GRACE: '3',
      EARSHOT_LOG_LEVEL: 'warn',
    })
    await serve.waitForOutput('Press Ctrl+C', ({ stdout }) => stdout.includes('Press Ctrl+C to stop.'))
    const partnerUrl = /Partner API: +(\S+)/.exec(serve.stdout())?.[1] as string
    const connection = await RawConnection.open(partnerUrl)
    connection.send(
      'POST /openapi/v1/token HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    )
    return { serve, connection }
  }

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  test('the same signal twice at once (Ctrl+C under npm start) is one: a graceful shutdown, exit 0', async () => {
    const { serve, connection } = await busyServer()
    try {
      serve.child.kill('SIGINT')
      await serve.waitForOutput('shutting down', ({ stderr }) => stderr.includes('SIGINT: shutting down'))
      serve.child.kill('SIGINT')
      assert.equal(await serve.exited, 0, serve.stderr())
      assert.doesNotMatch(serve.stderr(), /exiting now/)
    } finally {
      await connection.close()
      await serve.kill()
    }
  })

  test('the signal again a second later, or another signal at once: exit now, 1', async () => {
    const later = await busyServer()
    const other = await busyServer()
    try {
      later.serve.child.kill('SIGINT')
      await pause(1200)
      assert.equal(later.serve.child.exitCode, null, 'still shutting down')
      later.serve.child.kill('SIGINT')
      assert.equal(await later.serve.exited, 1)
      assert.match(later.serve.stderr(), /SIGINT: shutting down .*\nSIGINT again: exiting now\n$/)

      other.serve.child.kill('SIGINT')
      await other.serve.waitForOutput('shutting down', ({ stderr }) =>
        stderr.includes('SIGINT: shutting down'),
      )
      other.serve.child.kill('SIGTERM')
      assert.equal(await other.serve.exited, 1)
      assert.match(other.serve.stderr(), /SIGTERM again: exiting now\n$/)
    } finally {
      for (const { serve, connection } of [later, other]) {
        await connection.close()
        await serve.kill()
      }
    }
  })
})

describe('earshot serve: the way in', { timeout: 120_000 }, () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'earshot-serve-setup-'))
    await seedPgliteDataDir(join(dir, 'data'), { migrated: true })
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  /** `earshot serve` on the suite's data directory until it is ready; what it printed, then stopped. */
  async function started(
    env: Record<string, string> = {},
  ): Promise<{ stdout: string; stop(): Promise<void> }> {
    const serve = startCliProcess(cli, ['serve', '--port', '0', '--admin-port', '0'], {
      EARSHOT_DATA_DIR: join(dir, 'data'),
      EARSHOT_LOG_LEVEL: 'warn',
      ...env,
    })
    await serve.waitForOutput('Press Ctrl+C', ({ stdout }) => stdout.includes('Press Ctrl+C to stop.'))
    return {
      stdout: serve.stdout(),
      async stop() {
        serve.child.kill('SIGTERM')
        assert.equal(await serve.exited, 0, serve.stderr())
      },
    }
  }

  test('the setup link is printed at every start until an owner exists; no token is made up', async () => {
    const first = await started()
    await first.stop()
    const second = await started()
    const link = /^ {2}(http:\/\/\S+\/console\/#setup=(\S+))$/m.exec(second.stdout)
    assert.ok(link, second.stdout)
    assert.notEqual(first.stdout.match(/#setup=(\S+)/)?.[1], link[2], 'a new link at each start')
    assert.doesNotMatch(second.stdout, /EARSHOT_ADMIN_TOKEN/)
    assert.match(second.stdout, /Keys screen.*\n {2}export EARSHOT_API_KEY=<the key>\n/)

    const adminUrl = /Admin API: +(\S+)/.exec(second.stdout)?.[1] as string
    const setup = await fetch(`${adminUrl}/admin/v1/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: link[2], email: 'owner@example.com', password: 'a long owner password' }),
    })
    assert.equal(setup.status, 200, await setup.clone().text())
    await second.stop()

    const third = await started()
    await third.stop()
    assert.doesNotMatch(third.stdout, /setup|owner/)
  })

  test('with EARSHOT_ADMIN_TOKEN set, it says the break-glass key is on and every use audited', async () => {
    const run = await started({ EARSHOT_ADMIN_TOKEN: 'a-break-glass-token-of-some-length' })
    await run.stop()
    assert.match(
      run.stdout,
      /EARSHOT_ADMIN_TOKEN is set: it opens every admin route as the break-glass owner key/,
    )
    assert.doesNotMatch(run.stdout, /a-break-glass-token-of-some-length/, 'never the token itself')
  })
})
