import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { JsonObject } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { runCli } from '@earshot/test-kit/run-cli'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))
const RECORDINGS = 25

function recording(i: number): JsonObject {
  const minute = String(i).padStart(2, '0')
  return {
    audioId: `cli-${minute}`,
    deviceUid: `dev-${i % 2}`,
    title: `Meeting ${i}`,
    recordedAt: `2026-02-01T10:${minute}:00+01:00`,
    denoiseUrl: `https://media.example/${i}.mp3`,
    recordDuration: 30_000 + i,
    ...(i % 5 === 0 && {
      transcript: {
        transcriptId: 500 + i,
        transcriptText: `notes ${i}`,
        sentences: [{ text: `notes ${i}`, beginTime: 0, endTime: 1500 }],
        durationMs: 1500,
        wordsCount: 2,
      },
    }),
  }
}

describe('earshot-partner CLI against a running platform', { timeout: 180_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner
  let dir: string
  let env: Record<string, string>
  const cli = (...args: string[]) => runCli(bin, args, env)

  before(async () => {
    platform = await startTestPlatform('pglite')
    partner = await createPartner(platform, 'CLI Co')
    for (let i = 0; i < RECORDINGS; i++) await ingest(platform, partner.enterpriseId, recording(i))
    dir = await mkdtemp(join(tmpdir(), 'earshot-partner-cli-'))
    env = {
      EARSHOT_BASE_URL: platform.partnerUrl,
      EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
      EARSHOT_KEY_VERSION: String(partner.keyVersion),
      EARSHOT_SECRET: partner.secret,
    }
  })

  after(async () => {
    await platform?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('query --json prints exactly the decrypted page of the query, on one line', async () => {
    const result = await cli('query', '--size', '3', '--page', '2', '--json')
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    assert.equal(result.stdout.split('\n').filter(Boolean).length, 1)
    const list = JSON.parse(result.stdout)
    assert.deepEqual(Object.keys(list), ['specVersion', 'page', 'size', 'total', 'items'])
    // The same as the platform's own answer, opened by hand.
    const reply = await partner.call('/openapi/v1/audios', { size: 3, page: 2 })
    assert.deepEqual(reply.plaintext, list)
    assert.deepEqual(
      list.items.map((item: JsonObject) => Object.keys(item)),
      [
        ['audioId', 'data'],
        ['audioId', 'data'],
        ['audioId', 'data'],
      ],
    )
    // cli-20 is in the transcript form: transcriptSentences stays a string, no parsed copy is added.
    const transcript = list.items.find((item: JsonObject) => item.audioId === 'cli-20')
    assert.equal(typeof transcript.data.transcriptSentences, 'string')
  })

  test('query --json with filters', async () => {
    const result = await cli(
      'query',
      '--device-uid',
      'dev-1',
      '--start-time',
      '2026-02-01T09:05:00Z',
      '--end-time',
      '2026-02-01T10:15:00+01:00',
      '--json',
    )
    assert.equal(result.code, 0, result.stderr)
    const list = JSON.parse(result.stdout)
    assert.deepEqual(
      list.items.map((item: JsonObject) => item.audioId),
      ['cli-13', 'cli-11', 'cli-09', 'cli-07', 'cli-05'],
    )
    assert.equal(list.total, 5)
    const one = JSON.parse((await cli('query', '--audio-id', 'cli-07', '--json')).stdout)
    assert.deepEqual(
      one.items.map((item: JsonObject) => item.audioId),
      ['cli-07'],
    )
  })

  test('query without --json prints a table and the page line', async () => {
    const result = await cli('query', '--size', '10')
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.match(
      lines[0] as string,
      /^AUDIO ID\s+RECORDED AT \(UTC\)\s+DEVICE UID\s+TITLE\s+DURATION \(s\)\s+TRANSCRIPT$/,
    )
    assert.equal(lines.length, 12)
    assert.match(lines[1] as string, /^cli-24\s+2026-02-01T09:24:00\.000Z\s+dev-0\s+Meeting 24\s+30\.0\s+no$/)
    const withTranscript = lines.find((line) => line.startsWith('cli-20'))
    assert.match(
      withTranscript as string,
      /^cli-20\s+2026-02-01T09:20:00\.000Z\s+dev-0\s+Meeting 20\s+1\.5\s+yes$/,
    )
    assert.equal(lines.at(-1), 'page 1 of 3, total 25')

    const past = await cli('query', '--page', '9')
    assert.equal(past.stdout, 'No recordings on this page.\npage 9 of 2, total 25\n')
  })

  test('export --out writes one JSON line per recording, every page, then the count', async () => {
    const out = join(dir, 'all.jsonl')
    const result = await cli('export', '--out', out)
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, `Exported ${RECORDINGS} recordings to ${out}.\n`)
    const lines = (await readFile(out, 'utf8')).split('\n')
    assert.equal(lines.pop(), '')
    assert.equal(lines.length, RECORDINGS)
    const first = JSON.parse(lines[0] as string)
    assert.deepEqual(first, {
      audioId: 'cli-24',
      deviceUid: 'dev-0',
      title: 'Meeting 24',
      recordedAt: '2026-02-01T09:24:00.000Z',
      denoiseUrl: 'https://media.example/24.mp3',
      recordDuration: 30_024,
    })
    assert.deepEqual(
      new Set(lines.map((line) => JSON.parse(line).audioId)),
      new Set(Array.from({ length: RECORDINGS }, (_, i) => recording(i).audioId)),
    )
    assert.deepEqual(await readdir(dir), ['all.jsonl'], 'no partial file is left behind')

    const filtered = await cli('export', '--device-uid', 'dev-1', '--out', join(dir, 'dev-1.jsonl'), '--json')
    assert.equal(filtered.stdout, '{"exported": 12}\n')
    assert.equal((await readFile(join(dir, 'dev-1.jsonl'), 'utf8')).trim().split('\n').length, 12)
  })

  test('export without --out writes JSON Lines on stdout and the count on stderr; --progress', async () => {
    const result = await cli('export', '--progress')
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.equal(lines.length, RECORDINGS)
    assert.ok(lines.every((line) => typeof JSON.parse(line).audioId === 'string'))
    assert.match(result.stderr, /exporting \[.*\] 100% \| 25\/25/)
    assert.match(result.stderr, /Exported 25 recordings\.\n$/)
    // Without --progress and with stderr not a terminal: no bar.
    const quiet = await cli('export', '--audio-id', 'cli-01')
    assert.equal(quiet.stderr, 'Exported 1 recording.\n')
  })

  test('a failed export leaves no file behind', async () => {
    const out = join(dir, 'refused.jsonl')
    const result = await cli('export', '--start-time', 'yesterday', '--out', out)
    assert.equal(result.code, 1)
    assert.match(result.stderr, /^error 4001: startTime: /)
    assert.ok(!(await readdir(dir)).some((name) => name.startsWith('refused.jsonl')))
  })

  test('token --json prints {accessToken, expiresIn}; without --json just the token', async () => {
    const result = await cli('token', '--json')
    assert.equal(result.code, 0, result.stderr)
    const token = JSON.parse(result.stdout)
    assert.deepEqual(Object.keys(token), ['accessToken', 'expiresIn'])
    assert.equal(token.expiresIn, 7200)
    const reply = await partner.call('/openapi/v1/audios', { size: 1 }, token.accessToken)
    assert.equal(reply.body.code, 2000)

    const plain = await cli('token')
    assert.equal(plain.code, 0, plain.stderr)
    assert.match(plain.stdout, /^\S+\n$/)
  })

  test('missing credentials are named; flags override the environment', async () => {
    const none = await runCli(bin, ['query', '--json'], {})
    assert.equal(none.code, 1)
    // With --json the failure is on stdout too (json-errors.test.ts).
    assert.equal(JSON.parse(none.stdout).error.code, 'ERR_EARSHOT_CONFIG')
    assert.match(none.stderr, /missing credentials: set EARSHOT_ENTERPRISE_ID and EARSHOT_SECRET/)
    const noSecret = await runCli(bin, ['token'], { ...env, EARSHOT_SECRET: '' })
    assert.equal(noSecret.code, 1)
    assert.match(noSecret.stderr, /set EARSHOT_SECRET \(or pass --secret\)/)
    assert.doesNotMatch(noSecret.stderr, /EARSHOT_ENTERPRISE_ID/)
    const badSecret = await runCli(bin, ['token'], { ...env, EARSHOT_SECRET: 'not-a-secret' })
    assert.equal(badSecret.code, 1)
    assert.match(badSecret.stderr, /secret: a secret must be 44 characters/)

    const overridden = await runCli(
      bin,
      [
        '--base-url',
        platform.partnerUrl,
        '--enterprise-id',
        String(partner.enterpriseId),
        '--secret',
        partner.secret,
        'query',
        '--size',
        '1',
        '--json',
      ],
      { EARSHOT_BASE_URL: 'http://127.0.0.1:1', EARSHOT_ENTERPRISE_ID: '999', EARSHOT_SECRET: 'x' },
    )
    assert.equal(overridden.code, 0, overridden.stderr)
    assert.equal(JSON.parse(overridden.stdout).total, RECORDINGS)
  })

  test('refusals: error <code>: <msg> on stderr, exit 1, and {"error"} on stdout with --json', async () => {
    const local = await cli('query', '--size', '101', '--json')
    assert.equal(local.code, 1)
    assert.match(local.stderr, /^error 4001: size: /)
    assert.deepEqual(Object.keys(JSON.parse(local.stdout).error), ['code', 'msg'])
    assert.equal(JSON.parse(local.stdout).error.code, 4001)

    const wrongKey = await runCli(bin, ['query'], { ...env, EARSHOT_SECRET: 'w'.repeat(32) })
    assert.equal(wrongKey.code, 1)
    assert.equal(wrongKey.stdout, '')
    assert.match(wrongKey.stderr, /^error 4012: the envelope could not be decrypted: check the secret, /)

    const unreachable = await runCli(bin, ['token'], {
      ...env,
      EARSHOT_BASE_URL: platform.adminUrl.replace(/:\d+$/, ':1'),
    })
    assert.equal(unreachable.code, 1)
    assert.match(unreachable.stderr, /^cannot reach the platform at http:\/\/127\.0\.0\.1:1/)
  })
})
