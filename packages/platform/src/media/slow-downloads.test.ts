import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { LogCapture, type LogLine } from '@earshot/test-kit/log-capture'

/**
 * Issue 42, finding 2: a client that starts a download and never reads held its connection with no time
 * limit, counted as active and so never evicted; 32 addresses × 128 of them filled the listener for as
 * long as they liked. Answers a reader does not take are cut after EARSHOT_WRITE_TIMEOUT, and downloads
 * in progress are capped per link and per enterprise (4290 past them).
 */

const AUDIOS = '/openapi/v1/audios'
/** More than a client that never reads takes into its kernel buffers on loopback (about 4 MB). */
const FILE_BYTES = 5 * 1024 * 1024

/** A GET of the link from localAddress that reads nothing once the first bytes of the answer are there. */
async function neverReading(link: string, localAddress?: string): Promise<Socket> {
  const { hostname, port, pathname } = new URL(link)
  const socket = connect({ host: hostname, port: Number(port), ...(localAddress && { localAddress }) })
  socket.on('error', () => {})
  await once(socket, 'connect')
  socket.write(`GET ${pathname} HTTP/1.1\r\nHost: earshot\r\n\r\n`)
  // Evicted or cut, it closes instead.
  await new Promise((resolve) => {
    socket.once('readable', resolve)
    socket.once('close', resolve)
  })
  return socket
}

const isCut = (line: LogLine) => line.msg?.startsWith('reader too slow') === true

/** Resolves once the platform has logged `count` more readers cut than it had when called. */
function cuts(logs: LogCapture, count: number): Promise<unknown> {
  const target = logs.lines.filter(isCut).length + count
  return logs.waitFor((line) => isCut(line) && logs.lines.filter(isCut).length >= target)
}

/**
 * Reads again what a socket the platform cut holds, to its end: a client that reads nothing sees no close.
 * Resolves with the bytes it got, once it closed.
 */
async function drained(socket: Socket): Promise<number> {
  let bytes = 0
  socket.on('data', (chunk: Buffer) => {
    bytes += chunk.length
  })
  const closed = new Promise((resolve) => socket.once('close', resolve))
  socket.resume()
  await closed
  return bytes
}

async function storedAudioLink(platform: TestPartnerPlatform, audioId: string): Promise<string> {
  const { platform: running, partner } = platform
  await adminClientOf(running).call('ingestRecording', {
    params: { enterpriseId: partner.enterpriseId },
    body: {
      audioId,
      deviceUid: 'dev-slow',
      title: 'slow',
      recordedAt: '2026-11-01T08:00:00Z',
      denoiseUrl: 'https://cdn.example/slow.wav',
      recordDuration: 1,
    },
  })
  await adminClientOf(running).uploadAudio(partner.enterpriseId, audioId, randomBytes(FILE_BYTES), {
    contentType: 'audio/wav',
  })
  const reply = await partner.call(AUDIOS, { audioId })
  const items = (reply.plaintext as { items: { data: { denoiseUrl: string } }[] }).items
  return (items[0] as { data: { denoiseUrl: string } }).data.denoiseUrl
}

interface TestPartnerPlatform {
  platform: TestPlatform
  partner: TestPartner
}

async function expectTooMany(response: Response): Promise<void> {
  assert.equal(response.status, 429)
  const answer = (await response.json()) as Record<string, unknown>
  assert.deepEqual(Object.keys(answer), ['code', 'msg', 'requestId'])
  assert.equal(answer.code, 4290)
  assert.match(answer.msg as string, /EARSHOT_MEDIA_DOWNLOADS_PER_/)
  assert.match(response.headers.get('retry-after') ?? '', /^\d+$/)
}

for (const backend of testBackends) {
  describe(`downloads nobody reads (${backend})`, { timeout: 120_000 }, () => {
    let slow: TestPartnerPlatform
    let link: string
    const logs = new LogCapture()

    before(async () => {
      const platform = await startTestPlatform(
        backend,
        {
          writeTimeoutSeconds: 0.5,
          minSendRateBytes: 0,
          mediaDownloadsPerLink: 1,
          mediaDownloadsPerEnterprise: 2,
          mediaMaxBytes: FILE_BYTES,
          pushDispatch: false,
          logLevel: 'info',
        },
        { logDestination: logs.destination },
      )
      slow = { platform, partner: await createPartner(platform, 'Slow') }
      link = await storedAudioLink(slow, 'slow-1')
    })
    after(async () => {
      await slow?.platform.stop()
    })

    test('a download never read is cut after the write timeout, and its slot freed', {
      timeout: 20_000,
    }, async () => {
      const cut = cuts(logs, 1)
      const stalled = await neverReading(link)
      await cut
      assert.ok((await drained(stalled)) < FILE_BYTES, 'cut before the whole file was sent')
      // EARSHOT_MEDIA_DOWNLOADS_PER_LINK is 1: the link's one slot is free again.
      const again = await fetch(link)
      assert.equal(again.status, 200)
      assert.equal((await again.arrayBuffer()).byteLength, FILE_BYTES)
    })

    test('a link has at most EARSHOT_MEDIA_DOWNLOADS_PER_LINK downloads at once', async () => {
      const own = await storedAudioLink(slow, 'slow-5')
      const cut = cuts(logs, 1)
      const stalled = await neverReading(own)
      await expectTooMany(await fetch(own))
      await cut
      await drained(stalled)
    })

    test('an enterprise has at most EARSHOT_MEDIA_DOWNLOADS_PER_ENTERPRISE downloads at once', async () => {
      const links = [await storedAudioLink(slow, 'slow-2'), await storedAudioLink(slow, 'slow-3')]
      const third = await storedAudioLink(slow, 'slow-4')
      const cut = cuts(logs, 2)
      const stalled = await Promise.all(links.map((each) => neverReading(each)))
      await expectTooMany(await fetch(third))
      await cut
      await Promise.all(stalled.map(drained))
      const freed = await fetch(third)
      assert.equal(freed.status, 200)
      await freed.arrayBuffer()
    })
  })

  describe(`never-reading downloads from 3 addresses do not shut partners out (${backend})`, {
    timeout: 180_000,
  }, () => {
    const ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4']
    const PER_ADDRESS = 128
    let probe: TestPartnerPlatform
    let links: string[]
    const sockets: Socket[] = []

    before(async () => {
      const platform = await startTestPlatform(backend, {
        // Just room for the downloads: without the download caps they fill the listener.
        maxConnections: ADDRESSES.length * PER_ADDRESS,
        maxConnectionsPerClient: PER_ADDRESS,
        mediaDownloadsPerLink: 4,
        mediaDownloadsPerEnterprise: 6,
        mediaMaxBytes: FILE_BYTES,
        pushDispatch: false,
      })
      probe = { platform, partner: await createPartner(platform, 'Probe') }
      links = [await storedAudioLink(probe, 'probe-1'), await storedAudioLink(probe, 'probe-2')]
    })
    after(async () => {
      for (const socket of sockets) socket.destroy()
      await probe?.platform.stop()
    })

    test(`${ADDRESSES.length} addresses × ${PER_ADDRESS} downloads never read; another client's token and query requests all succeed`, async () => {
      // One after another: a connection still without its request is idle, and near the cap one is evicted.
      for (const [a, address] of ADDRESSES.entries()) {
        for (let i = 0; i < PER_ADDRESS; i++) {
          sockets.push(await neverReading(links[a % links.length] as string, address))
        }
      }
      for (let i = 0; i < 10; i++) {
        const token = await probe.partner.token()
        const reply = await probe.partner.call(AUDIOS, { audioId: 'probe-1' }, token)
        assert.equal(reply.body.code, 2000, JSON.stringify(reply.body))
      }
    })
  })
}
