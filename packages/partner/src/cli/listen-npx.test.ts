import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { generateSecret } from '@earshot/protocol'
import { eventually } from '@earshot/test-kit/eventually'
import { seededPartnerData } from '@earshot/test-kit/pglite-image'
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

/** A process group started for one test, its output gathered, killed at the end if anything is left. */
function startGroup(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, {
    cwd: repository,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const group = { pid: child.pid as number, output: '' }
  child.stdout.on('data', (chunk) => {
    group.output += chunk
  })
  child.stderr.on('data', (chunk) => {
    group.output += chunk
  })
  return group
}

/**
 * Signals the group's first process alone once the listener listens, then waits for the listener to stop
 * on its own: it says why, its port closes, and no process of the group is left.
 */
async function stopsWithoutItsStarter(group: { pid: number; output: string }, signal: NodeJS.Signals) {
  const port = await eventually(
    async () => /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(group.output)?.[1],
    60_000,
    `listening on …: ${group.output}`,
  ).then(Number)
  assert.ok(await portOpen(port))

  process.kill(group.pid, signal)
  await eventually(async () => /^stopped$/m.test(group.output), 30_000, `stopped: ${group.output}`)
  assert.match(group.output, /^parent process \d+ exited: stopping$/m)
  await eventually(async () => !(await portOpen(port)), 30_000, 'the port to close')
  await eventually(async () => !groupAlive(group.pid), 30_000, 'every process of the group to exit')
}

describe('listen under npx', { timeout: 120_000 }, () => {
  const groups: number[] = []
  const dirs: string[] = []
  after(async () => {
    for (const pgid of groups) if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL')
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })
  const credentials = () => ({ EARSHOT_ENTERPRISE_ID: '1', EARSHOT_SECRET: generateSecret() })
  const dataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'earshot-listen-npx-'))
    dirs.push(dir)
    return seededPartnerData(dir)
  }

  test('SIGTERM to the npx process alone: the listener says stopped, the port closes, no process is left', async () => {
    const args = ['--no-install', 'earshot-partner', 'listen', '--port', '0', '--data', await dataDir()]
    const npx = startGroup('npx', args, cleanEnv(credentials()))
    groups.push(npx.pid)
    await stopsWithoutItsStarter(npx, 'SIGTERM')
  })

  test('the process that started the shell killed alone (-9), the shell left running: the listener still stops', async () => {
    // What npm does, without its forwarding of signals: `sh -c` runs the listener (the `; exit` keeps the
    // shell from replacing itself with it), and nothing tells the shell when its starter is killed.
    const bin = join(repository, 'packages/partner/bin/earshot-partner.js')
    const listen = `"${process.execPath}" "${bin}" listen --port 0 --data "${await dataDir()}"; exit`
    const starter = `require('node:child_process').spawn('sh', ['-c', ${JSON.stringify(listen)}], { stdio: 'inherit' }); setInterval(() => {}, 60_000)`
    const group = startGroup(
      process.execPath,
      ['-e', starter],
      cleanEnv({ ...credentials(), npm_lifecycle_event: 'npx' }),
    )
    groups.push(group.pid)
    await stopsWithoutItsStarter(group, 'SIGKILL')
  })
})
