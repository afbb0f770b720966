import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest } from '@earshot/test-kit/calls'
import { runCli } from '@earshot/test-kit/run-cli'

/** `earshot recordings update|delete|upload-audio`. */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

describe('earshot recordings update and delete', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  let env: Record<string, string>
  let enterpriseId: number
  const earshot = (...args: string[]) => runCli(cli, args, env)

  async function row(audioId: string): Promise<{ title: string; record_duration: number } | undefined> {
    const [found] = await platform.context.db.query<{ title: string; record_duration: number }>(
      'SELECT title, record_duration FROM recordings WHERE audio_id = $1',
      [audioId],
    )
    return found
  }

  before(async () => {
    platform = await startTestPlatform('pglite')
    env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
    ;({ enterpriseId } = await createPartner(platform, 'Cli'))
    for (const audioId of ['cli-1', 'cli-2', 'cli-3']) {
      await ingest(platform, enterpriseId, {
        audioId,
        deviceUid: 'dev',
        title: audioId,
        recordedAt: '2026-02-01T00:00:00Z',
        denoiseUrl: `https://cdn.example/${audioId}.mp3`,
        recordDuration: 5,
      })
    }
  })
  after(async () => {
    await platform?.stop()
  })

  test('update --json changes the fields given and prints {"updated": AUDIO_ID}', async () => {
    const json = await earshot(
      'recordings',
      'update',
      'cli-1',
      '--enterprise',
      String(enterpriseId),
      '--title',
      'Renamed',
      '--record-duration',
      '9',
      '--json',
    )
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual(JSON.parse(json.stdout), { updated: 'cli-1' })
    assert.deepEqual(await row('cli-1'), { title: 'Renamed', record_duration: 9 })

    const refused = await earshot(
      'recordings',
      'update',
      'cli-1',
      '--enterprise',
      String(enterpriseId),
      '--json',
    )
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /error 4001: .*at least one/)
    const badNumber = await earshot(
      'recordings',
      'update',
      'cli-1',
      '--enterprise',
      String(enterpriseId),
      '--record-duration',
      'long',
    )
    assert.equal(badNumber.code, 1)
    assert.match(badNumber.stderr, /recordDuration/)
  })

  test('delete --json prints {"deleted": AUDIO_ID}; an unknown audioId exits non-zero with 4040', async () => {
    const json = await earshot(
      'recordings',
      'delete',
      'cli-2',
      '--enterprise',
      String(enterpriseId),
      '--json',
    )
    assert.equal(json.code, 0, json.stderr)
    assert.equal(json.stdout, '{"deleted": "cli-2"}\n')
    assert.equal(await row('cli-2'), undefined)

    const again = await earshot(
      'recordings',
      'delete',
      'cli-2',
      '--enterprise',
      String(enterpriseId),
      '--json',
    )
    assert.equal(again.code, 1)
    assert.match(again.stderr, /^error 4040: enterprise \d+ has no recording "cli-2"$/m)
    assert.equal(JSON.parse(again.stdout).error.code, 4040)

    const readable = await earshot('recordings', 'delete', 'cli-1', '--enterprise', String(enterpriseId))
    assert.equal(readable.code, 0, readable.stderr)
    assert.match(readable.stdout, /^Deleted recording cli-1 of enterprise \d+\.$/m)
  })

  test('upload-audio --json streams a file and prints what was stored; a missing file or type is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'earshot-upload-'))
    try {
      const bytes = randomBytes(100_000)
      const file = join(dir, 'take.wav')
      await writeFile(file, bytes)
      const json = await earshot(
        'recordings',
        'upload-audio',
        'cli-3',
        file,
        '--enterprise',
        String(enterpriseId),
        '--json',
      )
      assert.equal(json.code, 0, json.stderr)
      assert.deepEqual(JSON.parse(json.stdout), {
        audioId: 'cli-3',
        bytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        contentType: 'audio/wav',
      })
      const untyped = await earshot(
        'recordings',
        'upload-audio',
        'cli-3',
        join(dir, 'take.xyz'),
        '--enterprise',
        String(enterpriseId),
      )
      assert.equal(untyped.code, 1)
      assert.match(untyped.stderr, /--content-type/)
      const missing = await earshot(
        'recordings',
        'upload-audio',
        'cli-3',
        join(dir, 'none.wav'),
        '--enterprise',
        String(enterpriseId),
      )
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /no such file/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
