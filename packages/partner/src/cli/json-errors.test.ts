import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { seededPartnerData } from '@earshot/test-kit/pglite-image'
import { type CliRun, closedPort, runCli } from '@earshot/test-kit/run-cli'

/**
 * The convention of both CLIs: with --json every failure is also printed on stdout as
 * {"error": {"code", "msg"}} — a catalogue code (a number) for a refusal, an ERR_EARSHOT_… string for
 * what failed here — and the command exits 1; stderr says the same for a person.
 */

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

const DECRYPTION_FAILED =
  'the envelope could not be decrypted: check the secret, the enterpriseId and the keyVersion ' +
  '(the keyVersion must be that of the secret, and the key must be current); ' +
  '`earshot enterprise rotate-key` gives the enterprise a new secret and keyVersion'

function jsonError(run: CliRun): { code: number | string; msg: string } {
  assert.equal(run.code, 1, run.stderr)
  const lines = run.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  const parsed = JSON.parse(lines[0] as string)
  assert.deepEqual(Object.keys(parsed), ['error'])
  assert.deepEqual(Object.keys(parsed.error), ['code', 'msg'])
  return parsed.error
}

describe('earshot-partner --json errors', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner
  let dir: string
  let env: Record<string, string>

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    partner = await createPartner(platform, 'Json Errors Co')
    dir = await mkdtemp(join(tmpdir(), 'earshot-partner-json-'))
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

  test('a refusal by the platform: its code and msg (4012 says what to check)', async () => {
    const wrongKey = { ...env, EARSHOT_SECRET: 'w'.repeat(32) }
    const commands = [
      ['token'],
      ['query'],
      ['export', '--out', join(dir, 'out.jsonl')],
      ['download', 'some-audio', '--out', join(dir, 'some.audio')],
      ['sync', '--data', await seededPartnerData(join(dir, 'mirror'))],
      ['endpoints', 'list'],
      ['deliveries'],
      ['replay', '--since', '2026-01-01T00:00:00Z'],
      ['levels'],
      ['rotate-key'],
      ['portal'],
    ]
    for (const args of commands) {
      const run = await runCli(bin, [...args, '--json'], wrongKey)
      assert.deepEqual(jsonError(run), { code: 4012, msg: DECRYPTION_FAILED }, args.join(' '))
      assert.equal(run.stderr, `error 4012: ${DECRYPTION_FAILED}\n`, args.join(' '))
    }
  })

  test('missing or unusable credentials: ERR_EARSHOT_CONFIG', async () => {
    const none = await runCli(bin, ['query', '--json'], {})
    const missing = jsonError(none)
    assert.equal(missing.code, 'ERR_EARSHOT_CONFIG')
    assert.match(missing.msg, /^missing credentials: set EARSHOT_ENTERPRISE_ID and EARSHOT_SECRET/)
    assert.equal(none.stderr, `${missing.msg}\n`)

    const badSecret = await runCli(bin, ['token', '--json'], { ...env, EARSHOT_SECRET: 'not-a-secret' })
    const unusable = jsonError(badSecret)
    assert.equal(unusable.code, 'ERR_EARSHOT_CONFIG')
    assert.match(unusable.msg, /^the credentials are not usable: secret: a secret must be 44 characters/)
  })

  test("the client's own failures: their ERR_EARSHOT_… code", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`
    const unreachable = await runCli(bin, ['token', '--json'], { ...env, EARSHOT_BASE_URL: url })
    const error = jsonError(unreachable)
    assert.equal(error.code, 'ERR_EARSHOT_NETWORK')
    assert.match(error.msg, /^cannot reach the platform at http:\/\/127\.0\.0\.1:/)
    assert.equal(unreachable.stderr, `${error.msg}\n`)

    // Refused before sending: a catalogue code all the same.
    const local = await runCli(bin, ['query', '--size', '101', '--json'], env)
    assert.equal(jsonError(local).code, 4001)

    // Without --json, nothing on stdout.
    assert.equal((await runCli(bin, ['token'], { ...env, EARSHOT_BASE_URL: url })).stdout, '')
  })
})
