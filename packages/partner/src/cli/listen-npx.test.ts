import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { generateSecret } from '@earshot/protocol'
import { eventually } from '@earshot/test-kit/eventually'
import { cleanEnv } from '@earshot/test-kit/run-cli'

/**
 * A supervisor that signals `npx earshot-partner listen` alone (not its process group) ends npx and the
 * shell it runs the command in; the listener notices its parent is gone and stops as on SIGTERM.
 */

const repository = new URL('../../../../', import.meta.url).pathname

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

describe('listen under npx', { timeout: 120_000 }, () => {
  let dir: string | undefined
  let pgid: number | undefined
  after(async () => {
    if (pgid !== undefined && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL')
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('SIGTERM to the npx process alone: the listener says stopped, the port closes, no process is left', async () => {
    dir = await mkdtemp(join(tmpdir(), 'earshot-listen-npx-'))
    const env = cleanEnv({ EARSHOT_ENTERPRISE_ID: '1', EARSHOT_SECRET: generateSecret() })
    const npx = spawn('npx', ['--no-install', 'earshot-partner', 'listen', '--port', '0', '--data', dir], {
      cwd: repository,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    pgid = npx.pid as number
    let output = ''
    npx.stdout.on('data', (chunk) => {
      output += chunk
    })
    npx.stderr.on('data', (chunk) => {
      output += chunk
    })
    const port = await eventually(
      async () => /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(output)?.[1],
      60_000,
      `listening on …: ${output}`,
    ).then(Number)
    assert.ok(await portOpen(port))

    process.kill(npx.pid as number, 'SIGTERM')
    await eventually(async () => /^stopped$/m.test(output), 30_000, `stopped: ${output}`)
    assert.match(output, /^parent process \d+ exited: stopping$/m)
    await eventually(async () => !(await portOpen(port)), 30_000, 'the port to close')
    await eventually(async () => !groupAlive(pgid as number), 30_000, 'every process of the group to exit')
  })
})
