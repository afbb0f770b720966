import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, normalize } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  AccessToken,
  ChangePage,
  errorCatalogue,
  loadKey,
  open,
  PushEvent,
  parseTranscriptSentences,
  RecordingFilter,
  RecordingList,
} from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { runCli } from '@earshot/test-kit/run-cli'
import { grants, ROLE_NAMES } from '../access/roles.js'
import { ADMIN_TOKEN_REFUSED, API_KEY_REFUSED, NO_CREDENTIAL } from '../cli/client-command.js'
import {
  configurationTable,
  MEANINGS,
  settingReferences,
  withCurrentTable,
} from '../config/config-reference.js'
import { permissions } from '../http/permissions.js'
import {
  headingAnchors,
  markedBlock,
  readDocument,
  repositoryRoot,
  tableAfter,
} from './markdown.test.support.js'
import { BEGIN_MARKER, withCurrentPermissions } from './permission-table.js'

/**
 * The repository's docs/ say what the code does: the configuration reference is the one config.ts
 * renders, the operator guide's table of permissions is the one roles.ts grants, the CLI's refusals are
 * quoted as it words them, the guide's JSON Lines example imports as the guide says it does, the protocol's examples
 * are messages the protocol accepts, its table of answer codes is the catalogue, and no document points
 * outside the repository or at an anchor it does not have.
 */

const GUIDE = 'docs/operator-guide.md'
const PROTOCOL = 'docs/protocol.md'

describe('docs/configuration.md', { timeout: 30_000 }, () => {
  test('is the table config.ts renders (npm run docs:config rewrites it)', () => {
    const document = readDocument('docs/configuration.md')
    assert.equal(
      document,
      withCurrentTable(document),
      'docs/configuration.md is out of date with config.ts: run npm run docs:config',
    )
  })

  test('lists every setting of config.ts once, each with its meaning, default and rule', () => {
    const settings = settingReferences()
    assert.ok(settings.length >= 30)
    assert.deepEqual(Object.keys(MEANINGS).sort(), settings.map(({ env }) => env).sort())
    const table = configurationTable(settings)
    for (const { env, rule } of settings) {
      const rows = table.split('\n').filter((row) => row.startsWith(`| \`${env}\` |`))
      assert.equal(rows.length, 1, env)
      assert.ok(rows[0]?.includes(rule.replaceAll('|', '\\|')), `${env}: its rule`)
    }
  })

  test('each default shown is a value its variable accepts', async () => {
    const { loadConfig } = await import('../config/config.js')
    const rows = tableAfter(readDocument('docs/configuration.md'), '# Configuration reference')
    assert.equal(rows.length, settingReferences().length)
    for (const row of rows) {
      const [variable, shown] = row as [string, string]
      const raw = /^`([^`]*)`/.exec(shown)?.[1]
      if (raw === undefined) continue // *unset*
      const env = variable.replaceAll('`', '')
      assert.doesNotThrow(() => loadConfig({ [env]: raw }), `${env}=${raw}`)
    }
  })
})

describe('the operator guide: operators, roles and API keys', { timeout: 30_000 }, () => {
  const guide = readDocument(GUIDE)

  test('the table of permissions is the one roles.ts renders (npm run docs:permissions rewrites it)', () => {
    assert.equal(
      guide,
      withCurrentPermissions(guide),
      'docs/operator-guide.md is out of date with roles.ts: run npm run docs:permissions',
    )
  })

  test('each permission has its row, and a ✓ exactly where its role grants it', () => {
    const rows = tableAfter(guide, BEGIN_MARKER)
    assert.deepEqual(
      rows.map((row) => row[0]),
      Object.keys(permissions).map((permission) => `\`${permission}\``),
    )
    for (const row of rows) {
      const permission = (row[0] as string).replaceAll('`', '') as keyof typeof permissions
      assert.equal(row[1], permissions[permission])
      ROLE_NAMES.forEach((role, column) => {
        assert.equal(row[2 + column] === '✓', grants(role, permission), `${role} ${permission}`)
      })
    }
  })

  test("quotes the CLI's refusals as it words them", () => {
    for (const message of [
      NO_CREDENTIAL,
      `error 4010: ${API_KEY_REFUSED}`,
      `error 4010: ${ADMIN_TOKEN_REFUSED}`,
    ])
      assert.ok(guide.includes(`\n${message}\n`), `the guide quotes, on a line of its own: ${message}`)
  })
})

describe('the operator guide: the JSON Lines import example', { timeout: 60_000 }, () => {
  const guide = readDocument(GUIDE)
  const example = markedBlock(guide, 'example', 'import.jsonl')
  let platform: TestPlatform
  let directory: string

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    directory = await mkdtemp(join(tmpdir(), 'earshot-docs-'))
  })
  after(async () => {
    await platform?.stop()
    if (directory) await rm(directory, { recursive: true, force: true })
  })

  async function query(partner: TestPartner): Promise<Map<string, Record<string, unknown>>> {
    const reply = await partner.call('/openapi/v1/audios', { size: 100 })
    assert.equal(reply.body.code, 2000, JSON.stringify(reply.body))
    const list = RecordingList.parse(reply.plaintext)
    return new Map(list.items.map((item) => [item.audioId, item.data as Record<string, unknown>]))
  }

  test('is three recordings: audio only, transcript only, both', () => {
    assert.equal(example.language, 'jsonl')
    const lines = example.text.trim().split('\n')
    assert.equal(lines.length, 3)
    const recordings = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    const parts = recordings.map((r) => [r.denoiseUrl !== undefined, r.transcript !== undefined])
    assert.deepEqual(parts, [
      [true, false],
      [false, true],
      [true, true],
    ])
  })

  test('imports through the admin client, and partners get set B, set A, and set A with its audio', async () => {
    const partner = await createPartner(platform, 'Docs import')
    const lines = []
    for await (const line of adminClientOf(platform).importRecordings(partner.enterpriseId, example.text)) {
      lines.push(line)
    }
    assert.deepEqual(lines.at(-1), { imported: 3, skipped: 0 })

    const found = await query(partner)
    assert.equal(found.size, 3)
    const audioOnly = found.get('aud_standup_0001')
    assert.deepEqual(audioOnly, {
      deviceUid: 'DEV-0001',
      title: 'Standup',
      recordedAt: '2026-11-02T01:00:00.000Z',
      denoiseUrl: 'https://cdn.example.com/standup.mp3',
      recordDuration: 61000,
    })
    const transcriptOnly = found.get('aud_callnotes_0002')
    assert.equal(transcriptOnly?.transcriptId, 7001)
    assert.equal(transcriptOnly?.denoiseUrl, undefined)
    assert.deepEqual(parseTranscriptSentences(transcriptOnly?.transcriptSentences as string), [
      { text: 'Hello.', beginTime: 0, endTime: 900 },
      { text: 'Bye.', beginTime: 1200, endTime: 1800 },
    ])
    const [assigned, both] =
      [...found].find(
        ([audioId]) => !audioId.startsWith('aud_standup') && !audioId.startsWith('aud_callnotes'),
      ) ?? []
    assert.match(assigned ?? '', /^aud_[A-Za-z0-9_-]{16}$/, 'an audioId Earshot assigned')
    assert.equal(both?.transcriptId, 7002)
    assert.equal(both?.denoiseUrl, 'https://cdn.example.com/interview.mp3')
    assert.equal(both?.recordDuration, 5400000)
  })

  test('the command as printed imports it, and printed again imports nothing twice', async () => {
    // A platform of its own: an audioId is unique in a platform, whatever the enterprise.
    const own = await startTestPlatform('pglite', { pushDispatch: false })
    try {
      await importAsPrinted(own)
    } finally {
      await own.stop()
    }
  })

  async function importAsPrinted(platform: TestPlatform): Promise<void> {
    const partner = await createPartner(platform, 'Docs CLI import')
    const block = markedBlock(guide, 'example', 'import-command').text.trim().split('\n')
    const [command, printed] = block as [string, string]
    assert.match(command, /^npx earshot recordings import recordings\.jsonl --enterprise \d+ --json$/)
    const file = join(directory, 'recordings.jsonl')
    await writeFile(file, example.text)
    // `npx earshot` runs the bin npm links into node_modules/.bin.
    const bin = join(repositoryRoot, 'node_modules', '.bin', 'earshot')
    assert.ok(existsSync(bin), 'npm install links node_modules/.bin/earshot')
    const args = command
      .split(' ')
      .slice(2)
      .map((arg, index, all) =>
        arg === 'recordings.jsonl'
          ? file
          : all[index - 1] === '--enterprise'
            ? String(partner.enterpriseId)
            : arg,
      )
    const env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }

    const first = await runCli(bin, args, env)
    assert.equal(first.code, 0, first.stderr)
    assert.equal(`# ${first.stdout.trim()}`, printed)

    const again = await runCli(bin, args, env)
    assert.equal(again.code, 0, again.stderr)
    const rerun = /Run the same command again and it prints\s+`([^`]+)`/.exec(guide)?.[1]
    assert.equal(again.stdout.trim(), rerun)
    assert.equal((await query(partner)).size, 3)
  }
})

describe('the protocol: its examples and its answer codes', { timeout: 30_000 }, () => {
  const protocol = readDocument(PROTOCOL)
  const json = (name: string) => JSON.parse(markedBlock(protocol, 'example', name).text) as unknown

  test('the worked envelope opens, under the secret named, to the plaintext named, and is a test vector', () => {
    const secret = /the secret `([^`]+)` seals the\s+plaintext `([^`]+)`/.exec(protocol)
    assert.ok(secret, 'the worked example names its secret and plaintext')
    const [, key, plaintext] = secret as unknown as [string, string, string]
    const envelope = json('envelope')
    assert.deepEqual(open(envelope, loadKey(key)).plaintext, JSON.parse(plaintext))
    const vectors = JSON.parse(
      readFileSync(join(repositoryRoot, 'packages/protocol/test-data/envelope.json'), 'utf8'),
    ) as { valid: { secret: string; envelope: unknown; plaintext: string }[] }
    assert.ok(
      vectors.valid.some(
        (vector) =>
          vector.secret === key &&
          vector.plaintext === plaintext &&
          JSON.stringify(vector.envelope) === JSON.stringify(envelope),
      ),
      'the example is one of packages/protocol/test-data/envelope.json',
    )
  })

  test('the filter, the page, the push, the change page and the token are what the protocol accepts', () => {
    RecordingFilter.parse(json('filter'))
    const list = RecordingList.parse(json('recording-list'))
    for (const { data } of list.items) {
      if ('transcriptSentences' in data) parseTranscriptSentences(data.transcriptSentences)
    }
    assert.equal(list.total, list.items.length)
    PushEvent.parse(json('push'))
    ChangePage.parse(json('change-page'))
    AccessToken.parse(json('access-token'))
    const token = json('token-request') as Record<string, unknown>
    assert.deepEqual(Object.keys(token).sort(), [
      'alg',
      'ciphertext',
      'enterpriseId',
      'eventId',
      'keyVersion',
      'nonce',
      'specVersion',
      'tag',
    ])
  })

  test('the table of answer codes is the catalogue, each with its HTTP status', () => {
    const rows = tableAfter(protocol, '## Answer codes')
    const documented = rows.map((row) => Number(row[0]))
    const catalogue = [...errorCatalogue.keys()] as number[]
    assert.deepEqual(documented, catalogue, 'the codes documented are the catalogue, in its order')
    for (const row of rows) {
      const entry = errorCatalogue.get(Number(row[0]) as never)
      assert.equal(Number(row[1]), entry?.httpStatus, `${row[0]}: its HTTP status`)
      assert.equal(row[2], entry?.name, `${row[0]}: its name`)
    }
  })
})

describe("the README: a first screen, and the newcomer's blocks where scripts/newcomer.mjs reads them", () => {
  const readme = readDocument('README.md')

  test('is under 120 lines, and links every document of docs/', () => {
    assert.ok(readme.split('\n').length <= 120, `README.md has ${readme.split('\n').length} lines`)
    for (const name of readdirSync(join(repositoryRoot, 'docs')).filter((file) => file.endsWith('.md')))
      assert.ok(readme.includes(`](docs/${name})`), `README.md links docs/${name}`)
  })

  test('the platform and the first query in the README, the operator commands in the guide', () => {
    const platform = markedBlock(readme, 'newcomer', 'platform').text
    assert.match(platform, /^npm install\nnpm start\n$/)
    assert.match(markedBlock(readme, 'newcomer', 'first-query').text, /<the printed secret>/)
    // The first hour goes through the setup link to an API key, as `npm start` prints it.
    assert.match(readme, /setup link `npm start` printed[\s\S]*Keys[\s\S]*EARSHOT_API_KEY=<the key>/)
    const operator = markedBlock(readDocument(GUIDE), 'newcomer', 'operator').text
    assert.match(operator, /^export EARSHOT_API_KEY=<the API key you created>\n/)
    assert.match(operator, /recordings import recordings\.jsonl /, "imports the guide's example")
    assert.throws(() => markedBlock(readme, 'newcomer', 'operator'), /no <!-- newcomer: operator -->/)
  })
})

describe('the docs stand alone', { timeout: 60_000 }, () => {
  const documents = [
    'README.md',
    ...readdirSync(join(repositoryRoot, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
  ]
  const outside = [/\u00a7/, /DESIGN\.md/i, /\.\.\/shared\b/, /\bcontract\s+\d/i, /recording-openapi\.md/]

  test('no document points at a file outside the repository', () => {
    for (const path of documents) {
      const text = readDocument(path)
      for (const pattern of outside)
        assert.doesNotMatch(text, pattern, `${path} points outside the repository`)
    }
  })

  test('every relative link leads to a file of the repository, and every anchor to a heading', () => {
    for (const path of documents) {
      const text = readDocument(path).replace(/```[\s\S]*?```/g, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue
        const [file, anchor] = (target as string).split('#') as [string, string | undefined]
        const resolved = file === '' ? path : normalize(join(dirname(path), file))
        assert.ok(!resolved.startsWith('..'), `${path}: ${target} leaves the repository`)
        assert.ok(existsSync(join(repositoryRoot, resolved)), `${path}: ${target} does not exist`)
        if (anchor !== undefined && resolved.endsWith('.md')) {
          assert.ok(headingAnchors(readDocument(resolved)).has(anchor), `${path}: ${target}: no such heading`)
        }
      }
    }
  })

  test('the API reference both listeners serve points at nothing outside the repository', async () => {
    const platform = await startTestPlatform('pglite', { pushDispatch: false })
    try {
      for (const base of [platform.partnerUrl, platform.adminUrl]) {
        for (const path of ['/openapi.json', '/docs']) {
          const response = await fetch(`${base}${path}`)
          assert.equal(response.status, 200)
          const text = await response.text()
          for (const pattern of outside) assert.doesNotMatch(text, pattern, `${base}${path}`)
        }
      }
    } finally {
      await platform.stop()
    }
  })
})
