import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { generateSecret, type RecordingData } from '@earshot/protocol'
import { type CliRun, closedPort, runCli } from '@earshot/test-kit/run-cli'
import {
  type FakeApi,
  type MediaServer,
  sha256,
  startCliWorld,
  stopCliWorld,
} from '../client/fake-earshot.test.support.js'

/**
 * Every failure of the CLI follows its convention, file system errors included: with --json one line
 * {"error": {"code", "msg"}} on stdout, one line on stderr, exit code 1, and never a stack.
 */

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

function jsonFailure(run: CliRun): { code: string | number; msg: string } {
  assert.equal(run.code, 1, run.stderr)
  assert.doesNotMatch(run.stderr, /^\s+at /m, 'no stack')
  assert.equal(run.stderr.trimEnd().split('\n').length, 1, `one line on stderr: ${run.stderr}`)
  const lines = run.stdout.trimEnd().split('\n')
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  return JSON.parse(lines[0] as string).error
}

describe('the CLI’s failures: files and connections', { timeout: 120_000 }, () => {
  const secret = generateSecret()
  let media: MediaServer
  let api: FakeApi
  let dir: string
  let env: Record<string, string>
  let n = 0
  const cli = (...args: string[]) => runCli(bin, args, env)

  before(async () => {
    ;({ media, api, dir, env } = await startCliWorld(secret, 'earshot-cli-failures-'))
  })
  after(() => stopCliWorld({ media, api, dir }))

  /** A recording whose audio is at `link` (by default the media server's, holding random bytes). */
  const recording = (link?: string) => {
    const id = `fail-${++n}`
    const body = randomBytes(50_000)
    media.put(id, body, { contentType: 'audio/wav' })
    const data: RecordingData = {
      deviceUid: 'DEV-1',
      title: id,
      recordedAt: '2026-03-01T09:00:00.000Z',
      denoiseUrl: link ?? media.link(id),
      recordDuration: 9,
    }
    api.recordings.set(id, () => data)
    return { id, body }
  }

  test('download --out into a folder that does not exist makes the folder', async () => {
    const { id, body } = recording()
    const out = join(dir, 'missing', 'deeper', 'file.wav')
    const run = await cli('download', id, '--out', out, '--json')
    assert.equal(run.code, 0, run.stderr)
    assert.deepEqual(JSON.parse(run.stdout), {
      audioId: id,
      file: out,
      bytes: body.length,
      sha256: sha256(body).toString('hex'),
    })
    assert.deepEqual(await readFile(out), body)
  })

  test('download --out naming a folder puts <audioId>.<extension> in it', async () => {
    const { id, body } = recording()
    const folder = join(dir, 'into')
    await mkdir(folder)
    const run = await cli('download', id, '--out', folder, '--json')
    assert.equal(run.code, 0, run.stderr)
    assert.deepEqual(await readFile(join(folder, `${id}.wav`)), body)
  })

  test('a file where --out needs a folder is refused in one line: ERR_EARSHOT_FILE', async () => {
    const { id } = recording()
    const blocker = join(dir, 'a-file')
    await writeFile(blocker, 'not a folder')
    const out = join(blocker, 'x.wav')
    const failure = jsonFailure(await cli('download', id, '--out', out, '--json'))
    assert.equal(failure.code, 'ERR_EARSHOT_FILE')
    assert.match(failure.msg, /^--out .*x\.wav: cannot create the folder .*a-file: /)
    const plain = await cli('download', id, '--out', out)
    assert.equal(plain.stdout, '')
    assert.equal(plain.stderr, `${failure.msg}\n`)
    const exported = jsonFailure(await cli('export', '--out', out, '--json'))
    assert.equal(exported.code, 'ERR_EARSHOT_FILE')
  })

  test('a file system error while downloading is reported, not thrown: ERR_EARSHOT_FILE', async () => {
    const { id } = recording()
    const out = join(dir, 'blocked.wav')
    await mkdir(`${out}.part`) // the partial file cannot be opened
    const failure = jsonFailure(await cli('download', id, '--out', out, '--json'))
    assert.equal(failure.code, 'ERR_EARSHOT_FILE')
    assert.equal(failure.msg, `cannot open ${out}.part: it is a folder (EISDIR)`)
  })

  test('export --out into a folder that does not exist makes the folder', async () => {
    recording()
    const out = join(dir, 'exports', 'all.jsonl')
    const run = await cli('export', '--out', out, '--json')
    assert.equal(run.code, 0, run.stderr)
    assert.ok(existsSync(out))
  })

  test('a link whose host does not resolve names the host', async () => {
    const { id } = recording('https://media.invalid/hello.wav')
    const failure = jsonFailure(await cli('download', id, '--out', join(dir, 'dns.wav'), '--json'))
    assert.equal(failure.code, 'ERR_EARSHOT_NETWORK')
    assert.match(failure.msg, /^the audio download failed: cannot reach media\.invalid \(E[A-Z_]+\)$/)
  })

  test('a platform that cannot be reached names it, without "fetch failed"', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`
    const failure = jsonFailure(await runCli(bin, ['token', '--json'], { ...env, EARSHOT_BASE_URL: url }))
    assert.equal(failure.code, 'ERR_EARSHOT_NETWORK')
    assert.equal(failure.msg, `cannot reach the platform at ${url} (ECONNREFUSED)`)
  })
})
