import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { runCli } from '@earshot/test-kit/run-cli'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { EarshotClient } from '../index.js'
import { EarshotApiError } from './errors.js'

/**
 * An independent partner against a real platform: the operator uploads through `earshot recordings
 * upload-audio`, the partner gets the link from the query and from the push and downloads the exact bytes
 * with the kit — through a proxy that cuts the first download half-way, an expired link, a deletion.
 */

/** The platform's CLI, as the operator runs it (from this workspace). */
const earshotCli = fileURLToPath(new URL('../../../platform/bin/earshot.js', import.meta.url))
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

for (const backend of testBackends) {
  describe(`stored audio, downloaded by the kit (${backend})`, { timeout: 90_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let receiver: TestReceiver
    let proxy: CuttingProxy
    let client: EarshotClient
    let dir: string
    let now = Date.now()

    before(async () => {
      proxy = await startCuttingProxy()
      platform = await startTestPlatform(backend, { publicUrl: proxy.url }, { clock: () => now })
      proxy.target = Number(new URL(platform.partnerUrl).port)
      partner = await createPartner(platform, 'Listener')
      receiver = await startTestReceiver(partner.secret)
      await adminClientOf(platform).setPushUrl(partner.enterpriseId, receiver.url)
      // The platform's clock, moved a day on to expire links: the client's requests are sealed by it too.
      client = new EarshotClient({ ...partner, baseUrl: proxy.url, timeoutMs: 10_000, clock: () => now })
      dir = await mkdtemp(join(tmpdir(), 'earshot-kit-audio-'))
    })
    after(async () => {
      await platform?.stop()
      await receiver?.close()
      await proxy?.close()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    test('uploaded through the CLI, pushed with a link, downloaded exactly after a cut', async () => {
      const audioId = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'dev',
        title: 'kit download',
        recordedAt: '2026-11-01T08:00:00Z',
        transcript: { transcriptId: 1, transcriptText: 'hi', sentences: [], durationMs: 10, wordsCount: 1 },
      })
      const bytes = randomBytes(2_000_000)
      await writeFile(join(dir, 'take.wav'), bytes)
      const env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      const args = [
        'recordings',
        'upload-audio',
        audioId,
        join(dir, 'take.wav'),
        '--enterprise',
        String(partner.enterpriseId),
        '--json',
      ]
      const uploaded = await runCli(earshotCli, args, env)
      assert.equal(uploaded.code, 0, uploaded.stderr)
      assert.equal(JSON.parse(uploaded.stdout).sha256, sha256(bytes))

      const pushed = await eventually(
        async () =>
          receiver.received.find(
            (push) => push.event.audioId === audioId && push.event.eventType === 'recording.audio_ready',
          ),
        20_000,
        'the audio_ready push',
      )
      const pushedLink = (pushed.event.data as { denoiseUrl: string }).denoiseUrl
      assert.ok(pushedLink.startsWith(`${proxy.url}/media/v1/`))
      assert.deepEqual(
        Buffer.from(await (await fetch(pushedLink)).arrayBuffer()),
        bytes,
        'the pushed link serves the bytes',
      )

      proxy.cutNextAfter(1_000_000)
      const file = join(dir, 'kit.wav')
      const downloaded = await client.downloadAudio(audioId, file)
      assert.equal(proxy.cuts, 1, 'the first download was cut')
      assert.equal(downloaded.resumed, 1, 'and resumed from where it stopped')
      assert.equal(downloaded.verified, true)
      assert.equal(downloaded.sha256, sha256(bytes))
      assert.deepEqual(await readFile(file), bytes)
    })

    test('an expired link is replaced by a fresh one; a deleted recording is 4040', async () => {
      const audioId = await ingest(platform, partner.enterpriseId, {
        deviceUid: 'dev',
        title: 'expiring',
        recordedAt: '2026-11-02T08:00:00Z',
        denoiseUrl: 'https://cdn.example/x.mp3',
        recordDuration: 1,
      })
      const bytes = randomBytes(50_000)
      await adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, bytes, {
        contentType: 'audio/wav',
      })
      // The links the kit will be given are minted at its query: move time past a link minted now.
      const [item] = (await client.queryAudios({ audioId })).items
      now += (platform.context.config.mediaUrlTtlSeconds + 1) * 1000
      assert.ok(item)
      const expired = await fetch((item.data as { denoiseUrl: string }).denoiseUrl)
      assert.equal(expired.status, 403)
      const fresh = await client.downloadAudio(audioId, join(dir, 'fresh.wav'))
      assert.equal(fresh.sha256, sha256(bytes))

      await adminClientOf(platform).call('deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId },
      })
      await assert.rejects(
        client.downloadAudio(audioId, join(dir, 'gone.wav')),
        (error: unknown) => error instanceof EarshotApiError && error.code === 4040,
      )
    })
  })
}

interface CuttingProxy {
  url: string
  target: number
  cuts: number
  /** The next connection whose answer passes `bytes` is cut there. */
  cutNextAfter(bytes: number): void
  close(): Promise<void>
}

/** A TCP proxy to the partner listener that can cut one connection part-way through its answer. */
async function startCuttingProxy(): Promise<CuttingProxy> {
  const sockets = new Set<Socket>()
  let cutAfter: number | undefined
  /** Bumped when a cut is asked for: each connection counts its answer's bytes from then on. */
  let armed = 0
  const proxy: CuttingProxy = {
    url: '',
    target: 0,
    cuts: 0,
    cutNextAfter: (bytes) => {
      cutAfter = bytes
      armed++
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
  const server: Server = createServer((downstream) => {
    const upstream = connect(proxy.target, '127.0.0.1')
    for (const socket of [downstream, upstream]) {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => {})
    }
    let answered = 0
    let counting = armed
    upstream.on('data', (chunk: Buffer) => {
      if (counting !== armed) {
        counting = armed
        answered = 0
      }
      answered += chunk.length
      if (cutAfter !== undefined && answered > cutAfter) {
        const over = answered - cutAfter
        cutAfter = undefined
        proxy.cuts++
        downstream.write(chunk.subarray(0, chunk.length - over), () => downstream.destroy())
        upstream.destroy()
        return
      }
      downstream.write(chunk)
    })
    downstream.on('data', (chunk: Buffer) => upstream.write(chunk))
    upstream.on('close', () => downstream.destroy())
    downstream.on('close', () => upstream.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as { port: number }
  proxy.url = `http://127.0.0.1:${address.port}`
  return proxy
}
