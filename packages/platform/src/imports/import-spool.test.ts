import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setEnvironment } from '@earshot/test-kit/environment'
import { ImportSpool, type SpooledRecording } from './import-spool.js'

/** The temporary file holding an import's validated recordings between its two passes. */

describe('import spool', { timeout: 30_000 }, () => {
  // A temporary directory of its own (os.tmpdir() follows TMPDIR), to see what the spool leaves there.
  let directory: string
  let restoreEnvironment = () => {}
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'earshot-spool-test-'))
    restoreEnvironment = setEnvironment({ TMPDIR: directory })
  })
  after(async () => {
    restoreEnvironment()
    await rm(directory, { recursive: true, force: true })
  })

  test('gives back what was written, in order, and leaves no name in the temporary directory', async () => {
    const spool = await ImportSpool.create()
    try {
      assert.deepEqual(await readdir(directory), [], 'the file has no name once created')
      const recordings: SpooledRecording[] = Array.from({ length: 3000 }, (_, i) => ({
        line: 2 * i + 1,
        recording: {
          audioId: `sp-${i}`,
          deviceUid: 'dev',
          // Some lines far longer than the blocks the spool writes and reads.
          title: i % 1000 === 7 ? `long ${'é'.repeat(700_000)}` : `café ${i} 🎧`,
          recordedAt: '2026-05-01T09:00:00Z',
          denoiseUrl: 'https://cdn.example/a.mp3',
          recordDuration: i,
        },
        size: 0,
      }))
      await spool.fill(
        (async function* () {
          yield* recordings
        })(),
      )
      const read: SpooledRecording[] = []
      for await (const entry of spool.entries()) read.push(entry)
      assert.deepEqual(
        read.map(({ line, recording }) => ({ line, recording })),
        recordings.map(({ line, recording }) => ({ line, recording })),
      )
      assert.ok(read.every((entry) => entry.size > 0))
    } finally {
      await spool.close()
    }
  })
})
