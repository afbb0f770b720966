import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { generateSecret, loadKey, type PushEvent, type RecordingData, seal } from '@earshot/protocol'
import { eventually, latch } from '@earshot/test-kit/eventually'
import { seededPartnerData } from '@earshot/test-kit/pglite-image'
import { type CliRun, runCli, spawnCli } from '@earshot/test-kit/run-cli'
import {
  type FakeApi,
  type MediaServer,
  sha256,
  startCliWorld,
  stopCliWorld,
} from '../client/fake-earshot.test.support.js'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

/** Runs the CLI to its end in `cwd`. */
const run = (cwd: string, args: string[], env: Record<string, string>): Promise<CliRun> =>
  runCli(bin, args, env, { cwd })

describe('the CLI’s audio: download, listen --audio, sync --audio', { timeout: 180_000 }, () => {
  const secret = generateSecret()
  let media: MediaServer
  let api: FakeApi
  let dir: string
  let env: Record<string, string>
  let n = 0

  before(async () => {
    ;({ media, api, dir, env } = await startCliWorld(secret, 'earshot-audio-cli-'))
  })
  after(() => stopCliWorld({ media, api, dir }))

  const audioData = (id: string): RecordingData => ({
    deviceUid: 'DEV-1',
    title: id,
    recordedAt: '2026-03-01T09:00:00.000Z',
    denoiseUrl: media.link(id),
    recordDuration: 9,
  })
  /** A recording with audio, known to the query; its id and bytes. */
  const recording = (size = 200_000, contentType = 'audio/mpeg') => {
    const id = `cli-${++n}`
    const body = randomBytes(size)
    media.put(id, body, { contentType })
    api.recordings.set(id, () => audioData(id))
    return { id, body }
  }
  const folder = async (name: string) => {
    const path = join(dir, name)
    await mkdir(path, { recursive: true })
    return path
  }

  test('download --out FILE --json prints {audioId, file, bytes, sha256} and writes the verified file', async () => {
    const { id, body } = recording()
    const cwd = await folder('json')
    const result = await run(cwd, ['download', id, '--out', 'audio.bin', '--json'], env)
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '', 'no progress bar when stderr is not a terminal')
    assert.equal(result.stdout.split('\n').filter(Boolean).length, 1)
    const printed = JSON.parse(result.stdout)
    assert.deepEqual(printed, {
      audioId: id,
      file: join(cwd, 'audio.bin'),
      bytes: body.length,
      sha256: sha256(body).toString('hex'),
    })
    assert.ok((await readFile(join(cwd, 'audio.bin'))).equals(body))
    assert.deepEqual(await readdir(cwd), ['audio.bin'])
  })

  test('download names the file ./<audioId>.<extension of its Content-Type>; --progress shows a bar', async () => {
    const cwd = await folder('default-names')
    const mp3 = recording()
    const wav = recording(1000, 'audio/wav')
    const unknown = recording(1000, 'application/x-unknown')
    const result = await run(cwd, ['download', mp3.id, '--progress'], env)
    assert.equal(result.code, 0, result.stderr)
    assert.match(
      result.stdout,
      new RegExp(`^Downloaded 200000 bytes to ${mp3.id}\\.mp3 \\(SHA-256 [0-9a-f]{64}, verified\\)\\.\\n$`),
    )
    assert.match(result.stderr, /downloading \[.*\] 100% \| 200000\/200000 bytes/)
    for (const { id } of [wav, unknown]) assert.equal((await run(cwd, ['download', id], env)).code, 0)
    assert.deepEqual(
      (await readdir(cwd)).sort(),
      [`${mp3.id}.mp3`, `${wav.id}.wav`, `${unknown.id}.audio`].sort(),
    )
    assert.ok((await readFile(join(cwd, `${mp3.id}.mp3`))).equals(mp3.body))
  })

  test('download resumes the .part an interrupted run left', async () => {
    const { id, body } = recording()
    const cwd = await folder('resume')
    const half = body.length / 2
    await writeFile(join(cwd, 'out.mp3.part'), body.subarray(0, half))
    await writeFile(join(cwd, 'out.mp3.part.etag'), `"${sha256(body).toString('hex')}"`)
    const result = await run(cwd, ['download', id, '--out', 'out.mp3', '--json'], env)
    assert.equal(result.code, 0, result.stderr)
    assert.equal(media.requests.at(-1)?.range, `bytes=${half}-`)
    assert.equal(media.requests.at(-1)?.status, 206)
    assert.ok((await readFile(join(cwd, 'out.mp3'))).equals(body))
    assert.deepEqual(await readdir(cwd), ['out.mp3'])
  })

  test('download refusals: 4040 as error <code>: <msg>; no audio part; exit 1 and no file', async () => {
    const cwd = await folder('refused')
    const missing = await run(cwd, ['download', 'no-such-recording', '--json'], env)
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^error 4040: the query has no recording no-such-recording/)
    assert.equal(JSON.parse(missing.stdout).error.code, 4040)

    const deleted = recording()
    media.remove(deleted.id)
    const gone = await run(cwd, ['download', deleted.id], env)
    assert.equal(gone.code, 1)
    assert.equal(gone.stderr, 'error 4040: the recording was deleted or its audio replaced\n')

    api.recordings.set('transcript-only', () => ({
      deviceUid: 'DEV-1',
      title: 'no audio',
      recordedAt: '2026-03-01T09:00:00.000Z',
      transcriptId: 1,
      transcriptText: 'hi',
      transcriptSentences: '[]',
      durationMs: 1,
      wordsCount: 1,
    }))
    const noAudio = await run(cwd, ['download', 'transcript-only'], env)
    assert.equal(noAudio.code, 1)
    assert.equal(noAudio.stderr, 'recording transcript-only has no audio part (no denoiseUrl)\n')
    assert.deepEqual(await readdir(cwd), [])
  })

  describe('listen --audio', { timeout: 120_000 }, () => {
    let listener: Listener
    let audioDir: string
    const key = loadKey(secret)
    const push = async (event: PushEvent) => {
      const response = await fetch(listener.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(seal(key, 1, event.eventId, event as never)),
      })
      return (await response.json()) as { code: number }
    }
    const recordingEvent = (
      audioId: string,
      eventType: 'recording.audio_ready' | 'recording.updated',
      occurredAt: string,
    ): PushEvent => ({ eventId: randomUUID(), eventType, audioId, occurredAt, data: audioData(audioId) })
    const confirmed = (audioId: string) =>
      api.calls.some((call) => call.path === '/openapi/v1/callback' && call.plaintext.audioId === audioId)

    before(async () => {
      audioDir = join(dir, 'listen-audio')
      listener = await startListen(
        [
          '--data',
          await seededPartnerData(join(dir, 'listen-data')),
          '--store',
          'files',
          '--audio',
          audioDir,
        ],
        env,
      )
    })
    after(async () => {
      listener?.child.kill('SIGKILL')
    })

    test('the answer does not wait for the download; the audio arrives after it, verified', async () => {
      const { id, body } = recording()
      const gate = latch()
      media.holdAnswers(gate.done)
      try {
        // Answered while the media server holds every download: the answer never waited for one.
        assert.equal(
          (await push(recordingEvent(id, 'recording.audio_ready', '2026-03-01T10:00:00Z'))).code,
          2000,
        )
      } finally {
        gate.signal()
        media.holdAnswers(undefined)
      }
      // Logged once the file is in place.
      await eventually(
        async () => listener.stderr().includes(`fetched the audio of ${id}: 200000 bytes in `),
        30_000,
        'the audio fetched',
      )
      assert.ok((await readFile(join(audioDir, `${id}.mp3`))).equals(body))
      await eventually(async () => confirmed(id), 30_000, 'the push confirmed')
    })

    test('recording.updated is stored as its own event, and its new audio replaces the old', async () => {
      const { id } = recording()
      const file = join(audioDir, `${id}.mp3`)
      assert.equal(
        (await push(recordingEvent(id, 'recording.audio_ready', '2026-03-01T10:00:00Z'))).code,
        2000,
      )
      await eventually(async () => existsSync(file), 30_000, 'the first audio fetched')
      const replaced = randomBytes(1234)
      media.put(id, replaced, { contentType: 'audio/wav' })
      assert.equal((await push(recordingEvent(id, 'recording.updated', '2026-03-02T10:00:00Z'))).code, 2000)
      const wav = join(audioDir, `${id}.wav`)
      await eventually(async () => existsSync(wav) && !existsSync(file), 30_000, 'the new audio fetched')
      assert.ok((await readFile(wav)).equals(replaced))
      const stored = JSON.parse(
        await readFile(join(dir, 'listen-data', 'recordings', `${id}.recording.updated.json`), 'utf8'),
      )
      assert.equal(stored.eventType, 'recording.updated')
      assert.match(listener.stderr(), new RegExp(`stored ${id} recording\\.updated \\(event `))
    })

    test('a failed download is logged; the push stays received and confirmed', async () => {
      const { id } = recording()
      const event = recordingEvent(id, 'recording.audio_ready', '2026-03-01T10:00:00Z')
      media.remove(id)
      assert.equal((await push(event)).code, 2000)
      await eventually(
        async () => listener.stderr().includes(`warning: could not fetch the audio of ${id}: error 4040`),
        30_000,
        'the failure logged',
      )
      await eventually(async () => confirmed(id), 30_000, 'the push confirmed')
      assert.ok(existsSync(join(dir, 'listen-data', 'recordings', `${id}.recording.audio_ready.json`)))
      assert.deepEqual(
        (await readdir(audioDir)).filter((name) => name.startsWith(`${id}.`)),
        [],
      )
    })

    test('a deletion removes the recording and its audio before it is answered, then confirms the erasure', async () => {
      const { id } = recording()
      assert.equal(
        (await push(recordingEvent(id, 'recording.audio_ready', '2026-03-01T10:00:00Z'))).code,
        2000,
      )
      const file = join(audioDir, `${id}.mp3`)
      await eventually(async () => existsSync(file), 30_000, 'the audio fetched')
      const deletion: PushEvent = {
        eventId: randomUUID(),
        eventType: 'recording.deleted',
        audioId: id,
        occurredAt: '2026-03-03T10:00:00Z',
        data: {},
      }
      assert.equal((await push(deletion)).code, 2000)
      assert.deepEqual(
        (await readdir(audioDir)).filter((name) => name.startsWith(`${id}.`)),
        [],
      )
      const recordings = join(dir, 'listen-data', 'recordings')
      assert.deepEqual(
        (await readdir(recordings)).filter((name) => name.startsWith(`${id}.`)),
        [`${id}.recording.deleted.json`],
      )
      // Only then, after the answer, the erasure confirmed: the callback with erased: true.
      await eventually(
        async () =>
          api.calls.some(
            (call) =>
              call.path === '/openapi/v1/callback' &&
              call.plaintext.audioId === id &&
              call.plaintext.erased === true,
          ),
        30_000,
        'the erasure confirmed',
      )
      await eventually(
        async () => listener.stderr().includes(`confirmed the erasure of ${id}`),
        30_000,
        'the erasure confirmation logged',
      )
      listener.child.kill('SIGTERM')
      assert.equal(await listener.exited, 0, listener.stderr())
    })
  })

  test('sync --audio fetches the mirrored recordings’ audio, removes the deleted, and catches up on failures', async () => {
    const data = await seededPartnerData(join(dir, 'sync-data'))
    const audioDir = join(dir, 'sync-audio')
    const [a, b, c] = [recording(), recording(), recording()]
    const change = (audioId: string, kind: 'created' | 'updated' | 'deleted') => ({
      seq: api.changes.length + 1,
      audioId,
      change: kind,
      at: '2026-03-01T10:00:00Z',
      ...(kind !== 'deleted' && { data: audioData(audioId) }),
    })
    api.changes.push(
      change(a.id, 'created'),
      change(b.id, 'created'),
      change(c.id, 'created'),
      change(c.id, 'deleted'),
    )
    const sync = () => run(dir, ['sync', '--data', data, '--audio', audioDir, '--json'], env)
    const first = await sync()
    assert.equal(first.code, 0, first.stderr)
    assert.deepEqual(JSON.parse(first.stdout), {
      applied: 4,
      cursor: '4',
      lagSeconds: 0,
      audio: { fetched: 2, failed: 0 },
    })
    assert.deepEqual((await readdir(audioDir)).sort(), [`${a.id}.mp3`, `${b.id}.mp3`])
    assert.ok((await readFile(join(audioDir, `${a.id}.mp3`))).equals(a.body))

    // a's audio replaced, b deleted, d's audio failing.
    const replaced = randomBytes(999)
    media.put(a.id, replaced)
    const d = recording()
    media.remove(d.id)
    api.changes.push(change(a.id, 'updated'), change(b.id, 'deleted'), change(d.id, 'created'))
    const second = await sync()
    assert.equal(second.code, 1)
    assert.deepEqual(JSON.parse(second.stdout).audio, { fetched: 1, failed: 1 })
    assert.match(second.stderr, new RegExp(`warning: could not fetch the audio of ${d.id}: error 4040`))
    assert.match(second.stderr, /could not fetch the audio of 1 recording \(see the warnings above\)/)
    assert.deepEqual((await readdir(audioDir)).sort(), [`${a.id}.mp3`])
    assert.ok((await readFile(join(audioDir, `${a.id}.mp3`))).equals(replaced))

    // With no change left, the next sync fetches the audio the last one could not.
    media.put(d.id, d.body)
    const third = await sync()
    assert.equal(third.code, 0, third.stderr)
    assert.deepEqual(JSON.parse(third.stdout), {
      applied: 0,
      cursor: '7',
      lagSeconds: 0,
      audio: { fetched: 1, failed: 0 },
    })
    assert.ok((await readFile(join(audioDir, `${d.id}.mp3`))).equals(d.body))

    // Without --audio, sync prints what it always did.
    const plain = await run(
      dir,
      ['sync', '--data', await seededPartnerData(join(dir, 'plain-sync')), '--json'],
      env,
    )
    assert.equal(plain.code, 0, plain.stderr)
    assert.deepEqual(JSON.parse(plain.stdout), { applied: 7, cursor: '7', lagSeconds: 0 })
  })
})

interface Listener {
  child: ChildProcess
  url: string
  stderr: () => string
  exited: Promise<number | null>
}

/** Starts `earshot-partner listen` on a free port and waits for its "listening on" line. */
async function startListen(args: string[], env: Record<string, string>): Promise<Listener> {
  const child = spawnCli(bin, ['listen', '--port', '0', ...args], env)
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      const match = /^listening on (\S+)$/m.exec(stdout)
      if (match) resolve(match[1] as string)
    })
    void exited.then((code) => reject(new Error(`listen exited with ${code}: ${stderr}`)))
  })
  return { child, url, stderr: () => stderr, exited }
}
