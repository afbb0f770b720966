import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import { repositoryRoot } from './markdown.test.support.js'

/**
 * docs/earshot.service, the unit the operator guide installs: systemd-analyze verify finds nothing to
 * say about it, and its ExecStart runs the repository's `earshot` bin with a command it has.
 */

const run = promisify(execFile)
const UNIT = join(repositoryRoot, 'docs', 'earshot.service')
const CHECKOUT = '/opt/earshot'

const analyzer = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((path) => existsSync(path))

describe('docs/earshot.service', { timeout: 60_000 }, () => {
  const unit = readFileSync(UNIT, 'utf8')
  const execStart = /^ExecStart=(\S+) (\S+) (\S+)$/m.exec(unit)

  test('starts `node <checkout>/packages/platform/bin/earshot.js serve`, a bin and command the repository has', async () => {
    assert.ok(execStart, 'ExecStart=<node> <script> <command>')
    const [, node, script, command] = execStart as unknown as [string, string, string, string]
    assert.equal(node, '/usr/bin/node')
    assert.ok(script.startsWith(`${CHECKOUT}/`), `the script is in the checkout, ${CHECKOUT}`)
    const inRepository = join(repositoryRoot, script.slice(CHECKOUT.length + 1))
    assert.ok(existsSync(inRepository), `${script} is a file of the repository`)
    assert.equal(command, 'serve')
    const help = await run(process.execPath, [inRepository, command, '--help'])
    assert.match(help.stdout, /run the platform/)
    assert.match(unit, /^Environment=EARSHOT_DATA_DIR=\/var\/lib\/earshot\/data$/m)
    assert.match(unit, /^StateDirectory=earshot$/m)
  })

  test('systemd-analyze verify accepts it without a warning', {
    skip: !analyzer && 'systemd-analyze is not installed (apt-get install systemd): the unit is not verified',
  }, async () => {
    // verify checks that ExecStart's program exists: where Node.js is not at /usr/bin/node, the unit is
    // checked with this machine's path, the one change the guide tells operators to make.
    let path = UNIT
    let directory: string | undefined
    if (!existsSync('/usr/bin/node')) {
      directory = await mkdtemp(join(tmpdir(), 'earshot-unit-'))
      path = join(directory, 'earshot.service')
      await writeFile(path, unit.replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${process.execPath} `))
    }
    try {
      const { stdout, stderr } = await run(analyzer as string, ['verify', path]).catch(
        (error: { code?: number; stdout?: string; stderr?: string }) => {
          assert.fail(`systemd-analyze verify failed (${error.code}):\n${error.stderr}${error.stdout}`)
        },
      )
      const said = `${stdout}${stderr}`
        .split('\n')
        .filter((line) => line.includes('earshot.service'))
        .join('\n')
      assert.equal(said, '', 'systemd-analyze verify has something to say about the unit')
    } finally {
      if (directory) await rm(directory, { recursive: true, force: true })
    }
  })
})
