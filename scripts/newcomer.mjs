#!/usr/bin/env node
// A newcomer's first hour, on a fresh clone: clones the repository's last commit into a temporary
// directory, runs `npm install` there, then the shell blocks of README.md and packages/partner/README.md
// marked `<!-- newcomer: NAME -->`, as printed — only the placeholders `<the token npm start printed>` and
// `<the printed secret>` are filled in, from what `npm start` printed. It stops `npm start` and the
// partner's listener with SIGTERM and checks that npm start exits 0, the listener says it stopped, and
// no port is left listening. Needs the ports
// the README uses (8080, 8081, 3000) free. Run by CI after the build:
//
//   node scripts/newcomer.mjs
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { demoChime } from '../packages/platform/dist/demo/demo-audio.js'
import { markedBlock } from '../packages/platform/dist/docs/markdown.test.support.js'

const root = new URL('..', import.meta.url).pathname
const PORTS = [8080, 8081, 3000]
const STEP_MS = 300_000

const started = performance.now()
const work = await mkdtemp(join(tmpdir(), 'earshot-newcomer-'))
const clone = join(work, 'earshot')
const background = []
try {
  for (const port of PORTS)
    if (await listening(port)) fail(`port ${port} is in use: the README's commands need it`)
  await step('git clone', () => command('git', ['clone', '--quiet', root, clone], work))
  await step('npm install', () => shell('npm install'))
  const blocks = await newcomerBlocks()
  await writeFile(
    join(clone, 'recordings.jsonl'),
    markedBlock(await doc('docs/operator-guide.md'), 'example', 'import.jsonl').text,
  )
  await writeFile(join(clone, 'take.wav'), demoChime(0))

  const platform = await step('npm start', () => startInBackground(blocks.platform, /Run a first query/))
  const printed = {
    '<the token npm start printed>': matchOf(platform.output(), /export EARSHOT_ADMIN_TOKEN=(\S+)/),
    '<the printed secret>': matchOf(platform.output(), /secret: +(\S+)/),
  }
  const asPrinted = (block) => fillIn(block, printed)
  await step('the first query', () => shell(asPrinted(blocks['first-query'])))
  await step("the operator's commands", () => shell(asPrinted(blocks.operator)))
  const listener = await step('the partner listening', () =>
    startInBackground(asPrinted(blocks.listener), /listening on/),
  )
  await step('a push received', async () => {
    await shell(asPrinted(blocks.pusher))
    await listener.waitFor(/stored aud_\S+ recording\.audio_ready/)
  })
  await step('SIGTERM: npm start exits 0, the listener stops, nothing listening', async () => {
    // npx itself ends on the signal; the kit's listener, its child, stops in its own time and says so.
    const stopped = await listener.stop()
    if (!/^stopped$/m.test(stopped.output)) fail(`the listener did not say it stopped:\n${stopped.output}`)
    const { code, signal, output } = await platform.stop()
    if (code !== 0) fail(`npm start ended ${code ?? signal} after SIGTERM:\n${output}`)
    for (const port of PORTS) if (await listening(port)) fail(`port ${port} is still listening`)
  })
  console.log(`newcomer: every step passed in ${seconds(started)} s`)
} catch (error) {
  console.error(`newcomer: ${error.message}`)
  process.exitCode = 1
} finally {
  for (const each of background) each.kill()
  await rm(work, { recursive: true, force: true })
}

async function step(name, action) {
  const at = performance.now()
  const result = await action()
  console.log(`newcomer: ${name}: ok (${seconds(at)} s)`)
  return result
}

function seconds(since) {
  return ((performance.now() - since) / 1000).toFixed(1)
}

function fail(message) {
  throw new Error(message)
}

async function doc(path) {
  return readFile(join(clone, path), 'utf8')
}

async function newcomerBlocks() {
  const readmes = [await doc('README.md'), await doc('packages/partner/README.md')]
  const names = ['first-query', 'operator', 'platform', 'listener', 'pusher']
  const find = (name) => {
    for (const readme of readmes)
      if (readme.includes(`<!-- newcomer: ${name} -->`)) return markedBlock(readme, 'newcomer', name).text
    return fail(`no block is marked <!-- newcomer: ${name} -->`)
  }
  return Object.fromEntries(names.map((name) => [name, find(name)]))
}

function fillIn(block, values) {
  let text = block
  for (const [placeholder, value] of Object.entries(values)) text = text.replaceAll(placeholder, value)
  const left = /<the [^>]*>/.exec(text)
  if (left) fail(`no value for the placeholder ${left[0]}`)
  return text
}

function matchOf(text, pattern) {
  return pattern.exec(text)?.[1] ?? fail(`npm start did not print ${pattern}:\n${text}`)
}

/** A newcomer's shell: no Earshot variable set but what the block exports, npm's notices off. */
function shellEnv() {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(EARSHOT_|DATABASE_URL$|npm_)/.test(name)),
  )
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }
}

function command(file, args, cwd) {
  execFileSync(file, args, { cwd, stdio: 'inherit', timeout: STEP_MS })
}

/** Runs a block with `bash -e` in the clone; fails with its output unless it exits 0. Returns its stdout. */
async function shell(script) {
  const child = spawn('bash', ['-e', '-c', script], {
    cwd: clone,
    env: shellEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let output = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
    output += chunk
  })
  child.stderr.on('data', (chunk) => (output += chunk))
  const timer = setTimeout(() => child.kill('SIGKILL'), STEP_MS)
  const [code] = await once(child, 'exit')
  clearTimeout(timer)
  if (code !== 0) fail(`exit ${code} from:\n${script}\n--- its output:\n${output}`)
  return stdout
}

/** The environment a shell has after running `lines` (what they export). */
async function environmentAfter(lines) {
  if (lines.length === 0) return shellEnv()
  const entries = (await shell(`${lines.join('\n')}\nenv -0`)).split('\0').filter(Boolean)
  return Object.fromEntries(
    entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  )
}

/**
 * A block whose last command keeps running: the lines before it set the shell's environment, and the last
 * one runs as a terminal's foreground job (bash runs a lone command in its own place), in its own process
 * group.
 */
async function startInBackground(script, ready) {
  const lines = script.trimEnd().split('\n')
  const child = spawn('bash', ['-c', lines.at(-1)], {
    cwd: clone,
    env: await environmentAfter(lines.slice(0, -1)),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const waiters = new Set()
  const collect = (chunk) => {
    output += chunk
    for (const waiter of waiters) waiter()
  }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const exited = once(child, 'exit')
  const handle = {
    output: () => output,
    kill: () => signalGroup(child.pid, 'SIGKILL'),
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            done(
              new Error(`no ${pattern} within ${STEP_MS} ms from:\n${script}\n--- its output:\n${output}`),
            ),
          STEP_MS,
        )
        const check = () => pattern.test(output) && done()
        const done = (error) => {
          clearTimeout(timer)
          waiters.delete(check)
          if (error) reject(error)
          else resolve()
        }
        waiters.add(check)
        exited.then(([code]) => done(new Error(`exited ${code} before ${pattern}:\n${output}`)))
        check()
      }),
    /** SIGTERM to the process group (`kill -TERM -PGID`); resolves once none of its processes is left. */
    async stop() {
      signalGroup(child.pid, 'SIGTERM')
      const [code, signal] = await exited
      const deadline = performance.now() + STEP_MS
      while (signalGroup(child.pid, 0)) {
        if (performance.now() > deadline) fail(`a process of ${script} outlived it by ${STEP_MS} ms`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return { code, signal, output }
    },
  }
  background.push(handle)
  await handle.waitFor(ready)
  return handle
}

/** Signals a process group; false when it has no process left. */
function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal)
    return true
  } catch {
    return false
  }
}

async function listening(port) {
  const socket = connect(port, '127.0.0.1')
  try {
    await once(socket, 'connect')
    return true
  } catch {
    return false
  } finally {
    socket.destroy()
  }
}
