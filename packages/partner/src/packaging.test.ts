import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { closedPort } from '@earshot/test-kit/run-cli'

const run = promisify(execFile)
const repository = new URL('../../../', import.meta.url).pathname
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const pgliteVersion = (
  JSON.parse(readFileSync(join(repository, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as {
    version: string
  }
).version

/** The README's first ```js block after `heading`, with each placeholder replaced (each must be there). */
function readmeExample(heading: string, replacements: [string, string][]): string {
  const section = readme.slice(readme.indexOf(heading))
  const match = /```js\n([\s\S]*?)```/.exec(section)
  assert.ok(match?.[1], `the README has a js example under ${heading}`)
  let code = match[1]
  for (const [placeholder, value] of replacements) {
    assert.ok(code.includes(placeholder), `the example under ${heading} holds ${placeholder}`)
    code = code.replaceAll(placeholder, value)
  }
  return code
}

// What a partner does: npm pack the published packages, install the tarballs into an empty project,
// and run the README's examples against a running platform.
describe('the packed partner kit', { timeout: 240_000 }, () => {
  let project: string
  let platform: TestPlatform
  let partner: TestPartner
  let audioId: string
  /** The README's examples read their credentials from the environment, as a partner's shell has them. */
  const partnerEnv = () => ({
    ...process.env,
    EARSHOT_BASE_URL: platform.partnerUrl,
    EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
    EARSHOT_SECRET: partner.secret,
  })

  before(async () => {
    project = mkdtempSync(join(tmpdir(), 'earshot-kit-'))
    await run(
      'npm',
      [
        'pack',
        '--silent',
        '--pack-destination',
        project,
        ...['protocol', 'support', 'partner'].flatMap((p) => ['-w', `@earshot/${p}`]),
      ],
      { cwd: repository },
    )
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'partner-app', private: true, type: 'module' }),
    )
    // Everything the kit needs is in npm's cache after the repository's own install.
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--silent',
        ...['protocol', 'support', 'partner'].map((p) => `./earshot-${p}-0.1.0.tgz`),
        `@electric-sql/pglite@${pgliteVersion}`,
      ],
      { cwd: project },
    )
    platform = await startTestPlatform('pglite')
    partner = await createPartner(platform)
    audioId = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'DEV-1',
      title: 'Standup',
      recordedAt: '2026-11-20T09:00:00Z',
      denoiseUrl: 'https://cdn.example.com/a.wav',
      recordDuration: 60,
    })
  })

  after(async () => {
    await platform?.stop()
    if (project) rmSync(project, { recursive: true, force: true })
  })

  test('installs only what the kit needs: no Fastify, no PostgreSQL driver, no platform', () => {
    for (const absent of ['fastify', 'pg', '@earshot/platform', '@earshot/test-kit'])
      assert.equal(existsSync(join(project, 'node_modules', absent)), false, `${absent} is not installed`)
    for (const present of ['@earshot/partner', '@earshot/protocol', '@earshot/support'])
      assert.ok(
        existsSync(join(project, 'node_modules', present, 'dist', 'index.js')) ||
          present === '@earshot/support',
      )
    // Shipped packages hold only shipped code: no test, test helper, fixture or bench module.
    for (const name of ['partner', 'protocol', 'support']) {
      const shipped = readdirSync(join(project, 'node_modules', '@earshot', name), { recursive: true })
      const testCode = shipped.map(String).filter((path) => /\.test\.|fixture|bench/.test(path))
      assert.deepEqual(testCode, [], `@earshot/${name} ships no test code`)
    }
  })

  test("the README's client quick start runs", async () => {
    const code = readmeExample('## Client quick start', [])
    writeFileSync(join(project, 'quick-start.mjs'), code)
    const { stdout } = await run(process.execPath, ['quick-start.mjs'], {
      cwd: project,
      env: partnerEnv(),
    })
    assert.deepEqual(
      stdout.trim().split('\n'),
      ['REC-ALPHA-01: 0 recordings', '1'],
      'one page of one recording since 2026-11-01',
    )
  })

  test("the README's quickstart.mjs runs as printed, credentials from the environment", async () => {
    const block = /<!-- newcomer: node-file quickstart\.mjs -->\s*```js\n([\s\S]*?)```/.exec(readme)?.[1]
    assert.ok(block, 'the README has the quickstart.mjs block')
    const alpha = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'REC-ALPHA-01',
      title: 'Alpha',
      recordedAt: '2026-11-22T09:00:00Z',
      denoiseUrl: 'https://cdn.example.com/alpha.wav',
      recordDuration: 10,
    })
    writeFileSync(join(project, 'quickstart.mjs'), block)
    const { stdout } = await run(process.execPath, ['quickstart.mjs'], {
      cwd: project,
      env: {
        ...process.env,
        EARSHOT_BASE_URL: platform.partnerUrl,
        EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
        EARSHOT_SECRET: partner.secret,
      },
    })
    assert.match(stdout, /^recordings on REC-ALPHA-01: 1\n/)
    assert.match(stdout, new RegExp(`^${alpha}  2026-11-22T09:00:00(\\.000)?Z  Alpha$`, 'm'))
  })

  test("the README's change feed example reads the feed to its end", async () => {
    const code = readmeExample('## Following the change feed', [])
    const myDatabase = `const tx = {
  upsert: async (audioId, data) => console.log(JSON.stringify(['upsert', audioId, data.title])),
  remove: async (audioId) => console.log(JSON.stringify(['remove', audioId])),
  saveCursor: async (cursor) => console.log(JSON.stringify(['cursor', typeof cursor])),
}
const myDatabase = { loadCursor: async () => undefined, transaction: (work) => work(tx) }
`
    writeFileSync(join(project, 'changes.mjs'), myDatabase + code)
    const { stdout } = await run(process.execPath, ['changes.mjs'], {
      cwd: project,
      env: partnerEnv(),
    })
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.deepEqual(lines[0], ['upsert', audioId, 'Standup'])
    assert.deepEqual(lines.at(-1), ['cursor', 'string'])
  })

  test("the README's receiver stores a pushed recording and confirms it", async () => {
    const port = await closedPort()
    const code = readmeExample('## Receiving pushes', [['3000', String(port)]])
    writeFileSync(join(project, 'receiver.mjs'), code)
    const receiver: ChildProcess = spawn(process.execPath, ['receiver.mjs'], {
      cwd: project,
      env: partnerEnv(),
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let output = ''
    receiver.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    try {
      await eventually(async () => output.includes('listening'), 30_000, 'the receiver to listen')
      const pushUrl = `http://127.0.0.1:${port}/earshot/push`
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl },
      })
      const pushed = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'DEV-1',
        title: 'Retro',
        recordedAt: '2026-11-21T09:00:00Z',
        denoiseUrl: 'https://cdn.example.com/b.wav',
        recordDuration: 30,
      })
      await eventually(
        async () => {
          const { deliveries } = await adminCall(platform, 'listDeliveries', { query: { audioId: pushed } })
          return deliveries[0]?.state === 'confirmed'
        },
        60_000,
        'the delivery to be confirmed',
      )
      assert.deepEqual(output.match(/^stored .*$/gm), [`stored ${pushed} recording.audio_ready`])
      const file = JSON.parse(readFileSync(join(project, 'recordings', `${pushed}.json`), 'utf8'))
      assert.equal(file.eventType, 'recording.audio_ready')
      assert.equal(file.data.title, 'Retro')
    } finally {
      receiver.kill()
    }
  })
})
