#!/usr/bin/env node
// A newcomer's first hour, on a fresh clone: clones the repository's last commit into a temporary
// directory and runs, as printed, the shell blocks marked `<!-- newcomer: NAME -->`: README.md's
// `npm install` and `npm start` and first query; then what the README has a newcomer do in the console:
// the setup link `npm start` printed creates the first owner, who creates an API key in the Keys screen
// (the script sends the requests those pages send: POST /admin/v1/setup, then POST /admin/v1/keys with the
// session's cookie and CSRF token); then docs/operator-guide.md's operator commands with that key, then
// each partner kit's "try it on one machine" blocks (packages/partner, kits/python, kits/go:
// `KIT-install`, `KIT-file PATH`, `KIT-quickstart`, `KIT-receiver`, `KIT-push`, `KIT-download`), each kit
// in a fresh directory of its own.
// It fills in only the placeholders `<the API key you created>`, `<the printed secret>` and
// `/path/to/earshot` (the clone). For each kit it waits until the receiver stored the pushed recording and
// the platform shows its deliveries confirmed, checks that the downloaded audio's SHA-256 is the uploaded
// file's, then sends SIGTERM to the receiver's process alone (`npx` for the Node kit) and checks that no
// process of its group is left and its port is closed. At the end it stops `npm start` with SIGTERM and
// checks that it exits 0. Any engine warning (EBADENGINE) fails the run. Needs the ports the READMEs use
// free. Run by CI after the build (name kits to try only those: `node scripts/newcomer.mjs python go`):
//
//   node scripts/newcomer.mjs
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { demoChime } from '../packages/platform/dist/demo/demo-audio.js'
import { markedBlock } from '../packages/platform/dist/docs/markdown.test.support.js'

const root = new URL('..', import.meta.url).pathname
const KITS = [
  { name: 'node', readme: 'packages/partner/README.md', port: 3000, saysStopped: /^stopped$/m },
  { name: 'python', readme: 'kits/python/README.md', port: 8000 },
  { name: 'go', readme: 'kits/go/README.md', port: 8090 },
]
const chosen = process.argv.slice(2)
for (const name of chosen) if (!KITS.some((kit) => kit.name === name)) fail(`no kit is named ${name}`)
const kits = KITS.filter((kit) => chosen.length === 0 || chosen.includes(kit.name))
const PORTS = [8080, 8081, ...kits.map((kit) => kit.port)]
const ADMIN_URL = 'http://127.0.0.1:8081'
const STEP_MS = 300_000
const take = demoChime(0)

const started = performance.now()
const work = await mkdtemp(join(tmpdir(), 'earshot-newcomer-'))
const clone = join(work, 'earshot')
const background = []
try {
  for (const port of PORTS)
    if (await listening(port)) fail(`port ${port} is in use: the READMEs' commands need it`)
  await step('git clone', () => command('git', ['clone', '--quiet', root, clone], work))
  const readme = await doc('README.md')
  const guide = await doc('docs/operator-guide.md')
  const block = (name, document = readme) => markedBlock(document, 'newcomer', name).text
  await writeFile(join(clone, 'recordings.jsonl'), markedBlock(guide, 'example', 'import.jsonl').text)
  await writeFile(join(clone, 'take.wav'), take)

  const platform = await step('npm install, npm start', () =>
    startInBackground(block('platform'), /Press Ctrl\+C to stop/, clone),
  )
  const secret = matchOf(platform.output(), /secret: +(\S+)/)
  await step('the first query', () => shell(fillIn(block('first-query'), { '<the printed secret>': secret })))
  await step('a link into the partner portal, opened once', async () => {
    const printed = await shell(fillIn(block('portal'), { '<the printed secret>': secret }))
    const link = matchOf(printed, /(http:\/\/\S+\/portal\/enter\/\S+)/)
    const opened = await fetch(link, { redirect: 'manual' })
    const cookie = opened.headers.get('set-cookie') ?? ''
    if (opened.status !== 303 || !cookie.includes('earshot_portal=')) {
      fail(`the portal link answered ${opened.status} (${cookie || 'no cookie'}), not 303 with a session`)
    }
  })
  const apiKey = await step(
    "the setup link: the first owner, and an API key from the console's Keys screen",
    () => ownerKey(matchOf(platform.output(), /^ {2}(http:\/\/\S+\/console\/#setup=\S+)$/m)),
  )
  const printed = {
    '<the API key you created>': apiKey,
    '<the printed secret>': secret,
    '/path/to/earshot': clone,
  }
  await step("the operator's commands", () => shell(fillIn(block('operator', guide), printed)))
  for (const kit of kits) await tryKit(kit, printed)
  await step('SIGTERM: npm start exits 0, nothing listening', async () => {
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

/** A kit's README, followed in a fresh directory: install, quick start, receiver, a push, the download. */
async function tryKit(kit, printed) {
  const readme = await doc(kit.readme)
  const block = (name) => fillIn(markedBlock(readme, 'newcomer', `${kit.name}-${name}`).text, printed)
  const dir = join(work, `${kit.name}-partner`)
  await mkdir(dir)
  await step(`${kit.name}: install`, () => shell(block('install'), dir))
  for (const [path, text] of markedFiles(readme, kit.name)) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), text)
  }
  const quick = await step(`${kit.name}: quick start`, () => shell(block('quickstart'), dir))
  if (!/demo-\d{4}/.test(quick))
    fail(`the ${kit.name} quick start printed no recording of the demo:\n${quick}`)
  const receiver = await step(`${kit.name}: receiver listening`, () =>
    startInBackground(block('receiver'), /listening on/, dir),
  )
  const push = block('push')
  const audioId = matchOf(push, /upload-audio (\S+)/)
  await step(`${kit.name}: a push stored and confirmed`, async () => {
    await shell(push)
    await receiver.waitFor(new RegExp(`stored ${audioId} recording\\.updated`))
    await confirmed(audioId, printed['<the API key you created>'])
  })
  await step(`${kit.name}: the audio downloaded and verified`, async () => {
    const output = await shell(block('download'), dir)
    const sha256 = createHash('sha256').update(take).digest('hex')
    if (!output.includes(sha256))
      fail(`the download did not print the SHA-256 of take.wav (${sha256}):\n${output}`)
  })
  await step(`${kit.name}: SIGTERM to the receiver alone, nothing left`, async () => {
    const { output } = await receiver.stop({ alone: true })
    if (kit.saysStopped && !kit.saysStopped.test(output))
      fail(`the receiver did not say it stopped:\n${output}`)
    if (await listening(kit.port)) fail(`port ${kit.port} is still listening after the receiver stopped`)
  })
}

/** The blocks marked `<!-- newcomer: KIT-file PATH -->`: [PATH, text] to save in the kit's directory. */
function markedFiles(readme, kit) {
  const names = [...readme.matchAll(new RegExp(`<!-- newcomer: (${kit}-file \\S+) -->`, 'g'))].map(
    (m) => m[1],
  )
  return names.map((name) => [name.slice(`${kit}-file `.length), markedBlock(readme, 'newcomer', name).text])
}

/**
 * What a newcomer does in the console with the setup link: the setup page creates the first owner and signs
 * them in (a session cookie, and the CSRF token every change carries), then the Keys screen creates an
 * owner's API key. Answers the key.
 */
async function ownerKey(setupUrl) {
  const { origin, hash } = new URL(setupUrl)
  const token = hash.replace(/^#setup=/, '')
  const setup = await fetch(`${origin}/admin/v1/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      token,
      email: 'owner@example.com',
      name: 'Newcomer',
      password: 'a newcomer owner password',
    }),
  })
  if (setup.status !== 200) fail(`the setup link was refused (HTTP ${setup.status}): ${await setup.text()}`)
  const { csrfToken } = await setup.json()
  const cookie = (setup.headers.get('set-cookie') ?? '').split(';')[0]
  const created = await fetch(`${origin}/admin/v1/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
    body: JSON.stringify({ name: 'newcomer', role: 'owner' }),
  })
  if (created.status !== 201)
    fail(`the key was not created (HTTP ${created.status}): ${await created.text()}`)
  return (await created.json()).key
}

/** Waits until the platform shows every delivery of the recording confirmed (the receipt callbacks came). */
async function confirmed(audioId, token) {
  const deadline = performance.now() + STEP_MS
  let deliveries = []
  while (performance.now() < deadline) {
    const answer = await fetch(`${ADMIN_URL}/admin/v1/deliveries?enterpriseId=1&audioId=${audioId}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    deliveries = (await answer.json()).deliveries ?? []
    if (deliveries.length >= 2 && deliveries.every((delivery) => delivery.state === 'confirmed')) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  fail(`the deliveries of ${audioId} were not all confirmed:\n${JSON.stringify(deliveries, null, 2)}`)
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

function fillIn(block, values) {
  let text = block
  for (const [placeholder, value] of Object.entries(values)) text = text.replaceAll(placeholder, value)
  const left = /<the [^>]*>/.exec(text)
  if (left) fail(`no value for the placeholder ${left[0]}`)
  return text
}

function matchOf(text, pattern) {
  return pattern.exec(text)?.[1] ?? fail(`no ${pattern} in:\n${text}`)
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

/**
 * Runs a block with `bash -e` (in the clone unless told otherwise); fails with its output unless it exits 0,
 * or when it printed an engine warning. Returns its stdout.
 */
async function shell(script, cwd = clone) {
  const child = spawn('bash', ['-e', '-c', script], {
    cwd,
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
  if (output.includes('EBADENGINE')) fail(`an engine warning from:\n${script}\n--- its output:\n${output}`)
  return stdout
}

/** The environment a shell has after running `lines` (what they export). */
async function environmentAfter(lines, cwd) {
  if (lines.length === 0) return shellEnv()
  const marker = '--- the environment ---'
  const stdout = await shell(`${lines.join('\n')}\necho '${marker}'\nenv -0`, cwd)
  const entries = stdout
    .slice(stdout.lastIndexOf(`${marker}\n`) + marker.length + 1)
    .split('\0')
    .filter(Boolean)
  return Object.fromEntries(
    entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  )
}

/**
 * A block whose last command keeps running: the lines before it set the shell's environment, and the last
 * one runs as a terminal's foreground job (bash runs a lone command in its own place), in its own process
 * group.
 */
async function startInBackground(script, ready, cwd) {
  const lines = script.trimEnd().split('\n')
  const child = spawn('bash', ['-c', lines.at(-1)], {
    cwd,
    env: await environmentAfter(lines.slice(0, -1), cwd),
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
    /**
     * SIGTERM to the process group (`kill -TERM -PGID`, as a terminal's job control does), or to its first
     * process alone (as a supervisor does); resolves once none of the group's processes is left.
     */
    async stop({ alone = false } = {}) {
      if (alone) child.kill('SIGTERM')
      else signalGroup(child.pid, 'SIGTERM')
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
