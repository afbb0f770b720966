import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { type CliRun, closedPort, runCli } from '@earshot/test-kit/run-cli'

/**
 * How the `earshot` client commands fail: a wrong credential reads differently from a missing one, an
 * import's bad lines come one per line, and with --json every command prints its error on stdout as
 * {"error": {"code", "msg"}} (a catalogue code from the platform, an ERR_EARSHOT_… string for what
 * failed here) and exits 1.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

const NO_CREDENTIAL =
  'no credential: set EARSHOT_API_KEY to an API key (export EARSHOT_API_KEY=esk_...; an owner creates one ' +
  "in the console's Keys screen or with `earshot keys create`), or pass --api-key; on the platform's host, " +
  'the break-glass EARSHOT_ADMIN_TOKEN (or --admin-token) works too'
const TOKEN_REFUSED =
  'the admin token was refused: check EARSHOT_ADMIN_TOKEN (or --admin-token) is the break-glass token ' +
  '`earshot serve` was started with (it is off unless EARSHOT_ADMIN_TOKEN is set there), or use an API key ' +
  '(EARSHOT_API_KEY)'

function recording(audioId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    audioId,
    deviceUid: 'dev-cli',
    title: audioId,
    recordedAt: '2026-03-01T00:00:00Z',
    denoiseUrl: `https://cdn.example/${audioId}.mp3`,
    recordDuration: 2,
    ...extra,
  })
}

/** The one line of stdout, parsed: {"error": {"code", "msg"}}. */
function jsonError(run: CliRun): { code: number | string; msg: string } {
  assert.equal(run.code, 1, run.stderr)
  const lines = run.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  const parsed = JSON.parse(lines[0] as string)
  assert.deepEqual(Object.keys(parsed), ['error'])
  assert.deepEqual(Object.keys(parsed.error), ['code', 'msg'])
  return parsed.error
}

describe('earshot client commands: errors', { timeout: 300_000 }, () => {
  let platform: TestPlatform
  let dir: string
  let env: Record<string, string>
  let enterpriseId: number
  const earshot = (args: string[], extra: Record<string, string> = {}) =>
    runCli(cli, args, { ...env, ...extra })

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    dir = await mkdtemp(join(tmpdir(), 'earshot-cli-errors-'))
    env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
    ;({ enterpriseId } = await createPartner(platform, 'Cli Errors'))
  })
  after(async () => {
    await platform?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('a missing credential and a wrong break-glass token read differently', async () => {
    const missing = await runCli(cli, ['enterprise', 'list'], { EARSHOT_URL: platform.adminUrl })
    assert.equal(missing.code, 1)
    assert.equal(missing.stderr, `${NO_CREDENTIAL}\n`)
    assert.equal(missing.stdout, '')

    const wrong = await earshot(['enterprise', 'list'], { EARSHOT_ADMIN_TOKEN: 'not-the-admin-token' })
    assert.equal(wrong.code, 1)
    assert.equal(wrong.stderr, `error 4010: ${TOKEN_REFUSED}\n`)
    assert.equal(wrong.stdout, '')

    const missingJson = await runCli(cli, ['enterprise', 'list', '--json'], {
      EARSHOT_URL: platform.adminUrl,
    })
    assert.deepEqual(jsonError(missingJson), { code: 'ERR_EARSHOT_CONFIG', msg: NO_CREDENTIAL })
    assert.equal(missingJson.stderr, `${NO_CREDENTIAL}\n`)
    const wrongJson = await earshot(['enterprise', 'list', '--json'], { EARSHOT_ADMIN_TOKEN: 'wrong' })
    assert.deepEqual(jsonError(wrongJson), { code: 4010, msg: TOKEN_REFUSED })
  })

  test('with --json, every client command prints its refusal on stdout and exits 1', async () => {
    const file = join(dir, 'one.jsonl')
    await writeFile(file, `${recording('cli-err-1')}\n`)
    const audio = join(dir, 'take.wav')
    await writeFile(audio, Buffer.alloc(64))
    const id = String(enterpriseId)
    const commands = [
      ['enterprise', 'create', '--name', 'X'],
      ['enterprise', 'list'],
      ['enterprise', 'disable', id],
      ['enterprise', 'rotate-key', id],
      ['enterprise', 'set-push-url', id, 'https://push.example/x'],
      ['recordings', 'import', file, '--enterprise', id],
      ['recordings', 'update', 'cli-err-1', '--enterprise', id, '--title', 'T'],
      ['recordings', 'delete', 'cli-err-1', '--enterprise', id],
      ['recordings', 'upload-audio', 'cli-err-1', audio, '--enterprise', id],
      ['deliveries', 'list'],
      ['deliveries', 'show', '1'],
      ['deliveries', 'replay', '1'],
      ['endpoints', 'list'],
      ['endpoints', 'enable', 'https://push.example/x'],
      ['media', 'rotate-link-key'],
      ['keys', 'create', '--name', 'k', '--role', 'viewer'],
      ['keys', 'list'],
      ['keys', 'revoke', '1'],
      ['operators', 'add', 'x@example.com', '--role', 'viewer'],
      ['operators', 'list'],
      ['operators', 'update', '1', '--role', 'viewer'],
      ['operators', 'sign-out', '1'],
      ['audit', 'list'],
      ['audit', 'verify'],
    ]
    for (const args of commands) {
      const run = await earshot([...args, '--json'], { EARSHOT_ADMIN_TOKEN: 'wrong' })
      assert.deepEqual(jsonError(run), { code: 4010, msg: TOKEN_REFUSED }, args.join(' '))
      assert.equal(run.stderr, `error 4010: ${TOKEN_REFUSED}\n`, args.join(' '))
    }
  })

  test('recordings import: each bad line on a line of its own, on stderr and in --json', async () => {
    const file = join(dir, 'bad.jsonl')
    const { recordDuration: _omitted, ...noDuration } = JSON.parse(recording('cli-bad-3'))
    await writeFile(file, [recording('cli-bad-1'), '{oops', JSON.stringify(noDuration), ''].join('\n'))
    const msg = [
      'nothing was imported; fix these lines and import the file again:',
      "line 2: is not valid JSON at column 2: expected property name or '}'",
      'line 3: denoiseUrl: the audio part needs both denoiseUrl and recordDuration',
    ].join('\n')

    const readable = await earshot(['recordings', 'import', file, '--enterprise', String(enterpriseId)])
    assert.equal(readable.code, 1)
    assert.equal(readable.stdout, '')
    assert.equal(readable.stderr, `error 4001: ${msg}\n`)

    const json = await earshot(['recordings', 'import', file, '--enterprise', String(enterpriseId), '--json'])
    assert.deepEqual(jsonError(json), { code: 4001, msg })
  })

  test('recordings import of a JSON array says the file must be JSON Lines', async () => {
    const file = join(dir, 'array.json')
    await writeFile(file, `[${recording('cli-arr-1')},\n${recording('cli-arr-2')}]\n`)
    const run = await earshot(['recordings', 'import', file, '--enterprise', String(enterpriseId), '--json'])
    const error = jsonError(run)
    assert.equal(error.code, 4001)
    assert.match(
      error.msg,
      /^nothing was imported: the file must be JSON Lines, one recording object per line, not a JSON array/,
    )
    assert.equal(run.stderr, `error 4001: ${error.msg}\n`)
  })

  test('failures of the command itself, of the connection and of the command line, with --json', async () => {
    const absent = join(dir, 'absent.jsonl')
    const noFile = await earshot(['recordings', 'import', absent, '--enterprise', '1', '--json'])
    assert.deepEqual(jsonError(noFile), {
      code: 'ERR_EARSHOT_COMMAND',
      msg: `cannot read ${absent}: no such file`,
    })
    assert.equal(noFile.stderr, `cannot read ${absent}: no such file\n`)

    const url = `http://127.0.0.1:${await closedPort()}`
    const unreachable = await earshot(['enterprise', 'list', '--json'], { EARSHOT_URL: url })
    const error = jsonError(unreachable)
    assert.equal(error.code, 'ERR_EARSHOT_CONNECTION')
    assert.ok(error.msg.includes(url), error.msg)
    assert.equal(unreachable.stderr, `${error.msg}\n`)

    const usage = await earshot(['recordings', 'import', absent, '--json'])
    assert.deepEqual(jsonError(usage), {
      code: 'ERR_EARSHOT_USAGE',
      msg: "required option '--enterprise <id>' not specified",
    })
    assert.match(usage.stderr, /^error: required option '--enterprise <id>' not specified\n/)
    const badId = await earshot(['enterprise', 'disable', 'abc', '--json'])
    assert.equal(jsonError(badId).code, 'ERR_EARSHOT_USAGE')
    assert.match(jsonError(badId).msg, /an enterprise id is a positive integer/)
    // Without --json, stdout stays empty.
    assert.equal((await earshot(['enterprise', 'disable', 'abc'])).stdout, '')
  })
})
