import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { generateSecret } from '@earshot/protocol'
import { type DownloadProgress, downloadFromLink, type LinkDownloadOptions } from './audio-download.js'
import { EarshotClient } from './earshot-client.js'
import { EarshotApiError, EarshotDigestMismatchError, EarshotNoAudioError } from './errors.js'
import {
  FAKE_ENTERPRISE,
  type FakeApi,
  type MediaServer,
  sha256,
  startFakeApi,
  startMediaServer,
} from './fake-earshot.test.support.js'

const SIZE = 512 * 1024

describe('downloading a recording’s audio', { timeout: 60_000 }, () => {
  const secret = generateSecret()
  let media: MediaServer
  let api: FakeApi
  let client: EarshotClient
  let dir: string
  let n = 0

  before(async () => {
    media = await startMediaServer()
    api = await startFakeApi(secret)
    client = new EarshotClient({ baseUrl: api.url, ...FAKE_ENTERPRISE, secret })
    dir = await mkdtemp(join(tmpdir(), 'earshot-audio-'))
  })
  after(async () => {
    await media?.close()
    await api?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  /** A recording with `size` bytes of audio, queryable with a fresh link each time; its id and bytes. */
  const recording = (size = SIZE, options: { plain?: boolean } = {}) => {
    const id = `rec-${++n}`
    const body = randomBytes(size)
    media.put(id, body, options)
    api.recordings.set(id, () => ({
      deviceUid: 'DEV-1',
      title: id,
      recordedAt: '2026-03-01T09:00:00.000Z',
      denoiseUrl: media.link(id),
      recordDuration: 9,
    }))
    return { id, body, file: join(dir, `${id}.mp3`) }
  }
  /** Which recording each link is of. */
  const ids = new Map<string, string>()
  const requestsOf = (id: string) => media.requests.filter((request) => ids.get(request.link) === id)
  /** Downloads with downloadFromLink and a freshLink that counts its calls. */
  const fromLink = (id: string, link: string, extra: Partial<LinkDownloadOptions> = {}) => {
    let fresh = 0
    const freshLink = async () => {
      fresh++
      const next = media.link(id)
      ids.set(next, id)
      return next
    }
    ids.set(link, id)
    const file = join(dir, `${id}.mp3`)
    const destination = { partPath: `${file}.part`, finalPath: () => file }
    const result = downloadFromLink(link, destination, { freshLink, ...extra })
    return { result, fresh: () => fresh }
  }
  /** An onProgress that runs `then` once `at` bytes are had (the media server stalled there). */
  const when = (at: number, then: () => void) => ({
    onProgress: ({ bytes }: DownloadProgress) => {
      if (bytes === at) then()
    },
  })
  const leftovers = async (id: string) => (await readdir(dir)).filter((name) => name.startsWith(`${id}.`))

  test('a whole download through the client: streamed, verified against Repr-Digest, renamed', async () => {
    const { id, body, file } = recording()
    const progress: DownloadProgress[] = []
    const result = await client.downloadAudio(id, file, { onProgress: (each) => progress.push(each) })
    assert.deepEqual(result, {
      bytes: SIZE,
      sha256: sha256(body).toString('hex'),
      contentType: 'audio/mpeg',
      resumed: 0,
      verified: true,
    })
    assert.ok((await readFile(file)).equals(body))
    assert.deepEqual(await leftovers(id), [`${id}.mp3`], 'no .part or .etag left')
    assert.ok(progress.length > 1, 'progress is reported as the bytes arrive')
    assert.deepEqual(progress.at(-1), { bytes: SIZE, total: SIZE })
    const queries = api.calls.filter((call) => call.path === '/openapi/v1/audios')
    assert.deepEqual(
      queries.map(({ plaintext: { issuedAt, ...filter } }) => filter),
      [{ audioId: id }],
    )
    assert.ok(queries.every((call) => Number.isSafeInteger(call.plaintext.issuedAt)))
  })

  test('a connection cut half-way is resumed with Range and If-Range, and completed by a 206', async () => {
    const { id, body, file } = recording()
    const half = SIZE / 2
    media.stallNextAfter(half)
    const { result } = fromLink(
      id,
      media.link(id),
      when(half, () => media.cut()),
    )
    assert.equal((await result).resumed, 1)
    const etag = `"${sha256(body).toString('hex')}"`
    assert.deepEqual(
      requestsOf(id).map(({ range, ifRange, status }) => ({ range, ifRange, status })),
      [
        { range: undefined, ifRange: undefined, status: 200 },
        { range: `bytes=${half}-`, ifRange: etag, status: 206 },
      ],
    )
    assert.ok((await readFile(file)).equals(body), 'the bytes are exactly the file')
    assert.deepEqual(await leftovers(id), [`${id}.mp3`])
  })

  test('an expired link (403 4030) mid-way is replaced by a fresh one, which goes on from there', async () => {
    const { id, body, file } = recording()
    const link = media.link(id)
    const cutAt = SIZE / 4
    media.stallNextAfter(cutAt)
    const { result, fresh } = fromLink(
      id,
      link,
      when(cutAt, () => {
        media.expireLinks()
        media.cut()
      }),
    )
    assert.equal((await result).resumed, 1)
    assert.equal(fresh(), 1, 'one fresh link')
    const seen = requestsOf(id)
    assert.deepEqual(
      seen.map(({ range, status }) => ({ range, status })),
      [
        { range: undefined, status: 200 },
        { range: `bytes=${cutAt}-`, status: 403 },
        { range: `bytes=${cutAt}-`, status: 206 },
      ],
    )
    assert.equal(seen[1]?.link, link)
    assert.notEqual(seen[2]?.link, link, 'the last request went to the fresh link')
    assert.ok((await readFile(file)).equals(body))
  })

  test('a fresh link to audio replaced since: If-Range does not match, so the download starts over', async () => {
    const { id, file } = recording()
    const replacement = randomBytes(SIZE / 2)
    const cutAt = SIZE / 4
    media.stallNextAfter(cutAt)
    const { result, fresh } = fromLink(
      id,
      media.link(id),
      when(cutAt, () => {
        media.put(id, replacement)
        media.expireLinks()
        media.cut()
      }),
    )
    const downloaded = await result
    assert.equal(fresh(), 1)
    assert.equal(downloaded.resumed, 0)
    assert.equal(downloaded.sha256, sha256(replacement).toString('hex'))
    assert.ok((await readFile(file)).equals(replacement))
    assert.deepEqual(
      requestsOf(id).map(({ range, status }) => ({ range, status })),
      [
        { range: undefined, status: 200 },
        { range: `bytes=${cutAt}-`, status: 403 },
        { range: `bytes=${cutAt}-`, status: 200 },
      ],
    )
  })

  test('a digest mismatch is refused and the partial file removed', async () => {
    const { id } = recording()
    media.lieAboutDigest(true)
    try {
      const { result } = fromLink(id, media.link(id))
      await assert.rejects(result, (error) => {
        assert.ok(error instanceof EarshotDigestMismatchError)
        assert.equal(error.code, 'ERR_EARSHOT_DIGEST_MISMATCH')
        return true
      })
    } finally {
      media.lieAboutDigest(false)
    }
    assert.deepEqual(await leftovers(id), [])
  })

  test('404 4040 (deleted): a typed not-found error, and what an earlier call left is removed', async () => {
    const { id, file } = recording()
    const link = media.link(id)
    await writeFile(`${file}.part`, 'an earlier call')
    await writeFile(`${file}.part.etag`, '"earlier"')
    media.remove(id)
    const { result } = fromLink(id, link)
    await assert.rejects(result, (error) => {
      assert.ok(error instanceof EarshotApiError)
      assert.equal(error.code, 4040)
      assert.equal(error.name, 'NOT_FOUND')
      assert.equal(error.httpStatus, 404)
      return true
    })
    assert.deepEqual(await leftovers(id), [])
  })

  test('the client: a recording the query does not have → 4040; one without audio → EarshotNoAudioError', async () => {
    // What an earlier call left of a recording deleted since goes too.
    await writeFile(join(dir, 'none.mp3.part'), 'an earlier call')
    await writeFile(join(dir, 'none.mp3.part.etag'), '"earlier"')
    await assert.rejects(client.downloadAudio('no-such-recording', join(dir, 'none.mp3')), {
      name: 'NOT_FOUND',
      code: 4040,
    })
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
    await assert.rejects(
      client.downloadAudio('transcript-only', join(dir, 'transcript-only.mp3')),
      (error) => {
        assert.ok(error instanceof EarshotNoAudioError)
        assert.equal(error.audioId, 'transcript-only')
        return true
      },
    )
    assert.deepEqual(await leftovers('none'), [])
    assert.deepEqual(await leftovers('transcript-only'), [])
  })

  test('abort: the .part and its ETag are kept, and the next call resumes from them', async () => {
    const { id, body, file } = recording()
    const stalledAt = SIZE / 8
    media.stallNextAfter(stalledAt)
    const controller = new AbortController()
    const aborted = client.downloadAudio(id, file, {
      signal: controller.signal,
      onProgress: ({ bytes }) => bytes === stalledAt && controller.abort(new Error('stopped by the test')),
    })
    await assert.rejects(aborted, /stopped by the test/)
    assert.equal((await stat(`${file}.part`)).size, stalledAt)
    assert.equal(await readFile(`${file}.part.etag`, 'utf8'), `"${sha256(body).toString('hex')}"`)

    const resumed = await client.downloadAudio(id, file)
    assert.equal(resumed.resumed, 1)
    assert.equal(resumed.sha256, sha256(body).toString('hex'))
    assert.ok((await readFile(file)).equals(body))
    assert.equal(media.requests.at(-1)?.range, `bytes=${stalledAt}-`)
    assert.deepEqual(await leftovers(id), [`${id}.mp3`])
  })

  test('a stalled answer is abandoned after idleTimeoutMs and resumed', async () => {
    const { id, body } = recording()
    media.stallNextAfter(1000)
    const downloaded = await fromLink(id, media.link(id), { idleTimeoutMs: 200 }).result
    assert.equal(downloaded.resumed, 1)
    assert.equal(downloaded.sha256, sha256(body).toString('hex'))
    assert.deepEqual(
      requestsOf(id).map((request) => request.range),
      [undefined, 'bytes=1000-'],
    )
  })

  test('a .part whose ETag no longer matches, or that is larger than the file, starts over', async () => {
    const { id, body, file } = recording(4096)
    await writeFile(`${file}.part`, randomBytes(100))
    await writeFile(`${file}.part.etag`, '"another file"')
    const first = await fromLink(id, media.link(id)).result
    assert.equal(first.resumed, 0)
    assert.ok((await readFile(file)).equals(body))

    await writeFile(`${file}.part`, randomBytes(5000))
    await writeFile(`${file}.part.etag`, `"${sha256(body).toString('hex')}"`)
    const link = media.link(id)
    const second = await fromLink(id, link).result
    assert.equal(second.resumed, 0)
    assert.deepEqual(
      media.requests
        .filter((request) => request.link === link)
        .map(({ range, status }) => ({ range, status })),
      [
        { range: 'bytes=5000-', status: 416 },
        { range: undefined, status: 200 },
      ],
    )
    assert.ok((await readFile(file)).equals(body))
  })

  test('a link that is not Earshot’s (no ETag, no Repr-Digest): downloaded unverified, a cut starts over', async () => {
    const { id, body, file } = recording(SIZE, { plain: true })
    media.stallNextAfter(SIZE / 2)
    const downloaded = await fromLink(
      id,
      media.link(id),
      when(SIZE / 2, () => media.cut()),
    ).result
    assert.equal(downloaded.verified, false)
    assert.equal(downloaded.resumed, 0)
    assert.equal(downloaded.sha256, sha256(body).toString('hex'))
    assert.deepEqual(
      requestsOf(id).map(({ range, status }) => ({ range, status })),
      [
        { range: undefined, status: 200 },
        { range: undefined, status: 200 },
      ],
    )
    assert.ok((await readFile(file)).equals(body))
    assert.deepEqual(await leftovers(id), [`${id}.mp3`])
  })
})
