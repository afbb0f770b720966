import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, ingest } from '@earshot/test-kit/calls'
import { runCli } from '@earshot/test-kit/run-cli'

/**
 * Issue 42, finding 6: `earshot recordings upload-audio` with a file over the platform's limit said
 * "cannot reach the admin API … write EPIPE" about as often as it reported the 4130 (the platform
 * answers and closes while the file is still being sent); given a directory, it crashed with an
 * unhandled 'error' event.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))
const LIMIT = 100_000

for (const backend of testBackends) {
  describe(`earshot recordings upload-audio refusals (${backend})`, { timeout: 90_000 }, () => {
    let platform: TestPlatform
    let env: Record<string, string>
    let enterpriseId: number
    let audioId: string
    let dir: string

    before(async () => {
      platform = await startTestPlatform(backend, { mediaMaxBytes: LIMIT })
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      ;({ enterpriseId } = await createPartner(platform, 'Uploads'))
      audioId = await ingest(platform, enterpriseId, {
        deviceUid: 'dev',
        title: 'upload',
        recordedAt: '2026-11-01T08:00:00Z',
        denoiseUrl: 'https://cdn.example/a.mp3',
        recordDuration: 1,
      })
      dir = await mkdtemp(join(tmpdir(), 'earshot-upload-refusals-'))
    })
    after(async () => {
      await platform?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    const upload = (file: string, ...extra: string[]) =>
      runCli(
        cli,
        ['recordings', 'upload-audio', audioId, file, '--enterprise', String(enterpriseId), ...extra],
        env,
      )

    test('a 5 MB file against a 100 KB limit is reported as 4130 with the limit, every time', async () => {
      const file = join(dir, 'big.wav')
      await writeFile(file, randomBytes(5_000_000))
      for (let round = 0; round < 6; round++) {
        const json = await upload(file, '--json')
        assert.equal(json.code, 1, json.stderr)
        const { error } = JSON.parse(json.stdout) as { error: { code: unknown; msg: string } }
        assert.equal(error.code, 4130, `round ${round}: ${json.stdout}`)
        assert.match(error.msg, new RegExp(`${LIMIT} bytes`))
        const plain = await upload(file)
        assert.equal(plain.code, 1)
        assert.match(plain.stderr, /^error 4130: .*100000 bytes/m, `round ${round}: ${plain.stderr}`)
      }
      const [row] = await platform.context.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM recording_audio WHERE audio_id = $1',
        [audioId],
      )
      assert.equal(row?.n, 0)
    })

    test('a directory is a one-line error, in --json too', async () => {
      const plain = await upload(dir, '--content-type', 'audio/wav')
      assert.equal(plain.code, 1)
      assert.equal(plain.stdout, '')
      assert.deepEqual(plain.stderr.trim().split('\n'), [
        `cannot read ${dir}: it is a directory, not an audio file`,
      ])
      const json = await upload(join(dir, '.'), '--json', '--content-type', 'audio/wav')
      assert.equal(json.code, 1)
      const { error } = JSON.parse(json.stdout) as { error: { code: unknown; msg: string } }
      assert.equal(typeof error.code, 'string')
      assert.match(error.msg, /is a directory/)
      assert.equal(json.stderr.trim().split('\n').length, 1, json.stderr)
    })

    test('a file within the limit is still stored', async () => {
      const file = join(dir, 'small.mp3')
      const bytes = randomBytes(50_000)
      await writeFile(file, bytes)
      const json = await upload(file, '--json')
      assert.equal(json.code, 0, json.stderr)
      assert.deepEqual(
        { ...JSON.parse(json.stdout), sha256: undefined },
        { audioId, bytes: bytes.length, contentType: 'audio/mpeg', sha256: undefined },
      )
    })
  })
}
