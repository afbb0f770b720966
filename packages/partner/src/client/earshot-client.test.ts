import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { isTranscriptData, type JsonObject, open } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { EarshotClient, type EarshotClientOptions } from './earshot-client.js'
import {
  EarshotApiError,
  EarshotConfigError,
  EarshotError,
  EarshotNetworkError,
  EarshotResponseError,
  EarshotTimeoutError,
} from './errors.js'

const RECORDINGS = 45

interface Sent {
  path: string
  body: JsonObject
  authorization: string | undefined
}

/** The injected fetch: forwards to the real fetch and records every request the client sends. */
function recordingFetch(): { fetch: typeof fetch; sent: Sent[]; count(path: string): number } {
  const sent: Sent[] = []
  return {
    sent,
    count: (path) => sent.filter((each) => each.path === path).length,
    fetch: (input, init) => {
      const headers = new Headers(init?.headers)
      sent.push({
        path: new URL(String(input)).pathname,
        body: JSON.parse(String(init?.body)),
        authorization: headers.get('authorization') ?? undefined,
      })
      return fetch(input, init)
    },
  }
}

type ProxyAction =
  | { answer: { status: number; body: unknown; headers?: Record<string, string> } }
  | { forward: { authorization?: string } }
  | 'hang'
  | 'destroy'

interface Proxy {
  url: string
  arrived: Sent[]
  /** Paths of requests left hanging whose connection the client then closed, in that order. */
  cutOff: string[]
  close(): Promise<void>
}

/**
 * A real HTTP server in front of the platform. `decide` picks, per request (n counts requests to the
 * same path from 0), whether it is forwarded, answered by the proxy, left hanging or cut off.
 */
async function startProxy(
  target: string,
  decide: (path: string, n: number) => ProxyAction | undefined,
): Promise<Proxy> {
  const arrived: Sent[] = []
  const cutOff: string[] = []
  const open = new Set<ServerResponse>()
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    const path = request.url ?? '/'
    const n = arrived.filter((each) => each.path === path).length
    arrived.push({ path, body: JSON.parse(text), authorization: request.headers.authorization })
    const action = decide(path, n) ?? { forward: {} }
    if (action === 'hang') {
      open.add(response)
      response.once('close', () => {
        if (open.delete(response)) cutOff.push(path)
      })
      return
    }
    if (action === 'destroy') {
      request.socket.destroy()
      return
    }
    if ('answer' in action) {
      response.writeHead(action.answer.status, {
        'content-type': 'application/json',
        ...action.answer.headers,
      })
      response.end(JSON.stringify(action.answer.body))
      return
    }
    const authorization = action.forward.authorization ?? request.headers.authorization
    const upstream = await fetch(`${target}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization && { authorization }) },
      body: text,
    })
    const headers: Record<string, string> = {}
    for (const name of ['content-type', 'retry-after', 'x-request-id']) {
      const value = upstream.headers.get(name)
      if (value !== null) headers[name] = value
    }
    response.writeHead(upstream.status, headers)
    response.end(await upstream.text())
  }
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    arrived,
    cutOff,
    async close() {
      const hanging = [...open]
      open.clear()
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function recording(i: number): JsonObject {
  const minute = String(i).padStart(2, '0')
  return {
    audioId: `rec-${minute}`,
    deviceUid: `dev-${i % 3}`,
    title: `Recording ${i}`,
    recordedAt: `2026-01-01T00:${minute}:00Z`,
    denoiseUrl: `https://media.example/${i}.mp3`,
    recordDuration: 60_000 + i,
    ...(i % 2 === 0 && {
      transcript: {
        transcriptId: 1000 + i,
        transcriptText: `hello ${i}`,
        sentences: [
          { text: 'hello', beginTime: 0, endTime: 500 },
          { text: String(i), beginTime: 500, endTime: 900 },
        ],
        durationMs: 900,
        wordsCount: 2,
      },
    }),
  }
}

async function rejectsWith<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof type, `expected ${type.name}, got ${String(error)}`)
    return error
  }
  assert.fail(`expected ${type.name}, but the promise resolved`)
}

describe('EarshotClient against the platform', () => {
  let platform: TestPlatform
  let partner: TestPartner
  /** Moves the platform's clock (not the client's): tokens it issued expire for it. */
  let platformOffsetMs = 0
  const ids = Array.from({ length: RECORDINGS }, (_, i) => recording(i).audioId as string)

  const options = (extra: Partial<EarshotClientOptions> = {}): EarshotClientOptions => ({
    baseUrl: platform.partnerUrl,
    enterpriseId: partner.enterpriseId,
    keyVersion: partner.keyVersion,
    secret: partner.secret,
    ...extra,
  })

  before(async () => {
    // Requests are accepted up to a day after their issuedAt: tests move the platform's clock 2 h ahead.
    platform = await startTestPlatform(
      'pglite',
      { requestMaxAgeSeconds: 86_400 },
      { clock: () => Date.now() + platformOffsetMs },
    )
    partner = await createPartner(platform, 'Client Co')
    for (let i = 0; i < RECORDINGS; i++) await ingest(platform, partner.enterpriseId, recording(i))
  })

  after(async () => {
    await platform?.stop()
  })

  describe('construction', () => {
    test('refuses unusable options at once, naming the option and never echoing the secret', () => {
      const good = options()
      const cases: [Partial<EarshotClientOptions>, RegExp][] = [
        [{ secret: 'too-short' }, /^secret: a secret must be 44 characters/],
        [{ secret: `${good.secret.slice(0, 43)}!` }, /^secret: /],
        [{ baseUrl: 'ftp://example.com' }, /^baseUrl must be an absolute http/],
        [{ baseUrl: 'localhost:8080' }, /^baseUrl /],
        [{ enterpriseId: 0 }, /^enterpriseId must be a positive integer/],
        [{ enterpriseId: 1.5 }, /^enterpriseId /],
        [{ keyVersion: Number.NaN }, /^keyVersion must be a positive integer/],
        [{ timeoutMs: 0 }, /^timeoutMs /],
        [{ retries: -1 }, /^retries must be an integer/],
        [{ retries: Number.POSITIVE_INFINITY }, /^retries /],
        [{ clock: 5 as unknown as () => number }, /^clock must be a function/],
        [{ sleep: 5 as unknown as () => Promise<void> }, /^sleep must be a function/],
      ]
      for (const [override, message] of cases) {
        assert.throws(
          () => new EarshotClient({ ...good, ...override }),
          (error: unknown) =>
            error instanceof EarshotConfigError &&
            error instanceof EarshotError &&
            error.code === 'ERR_EARSHOT_CONFIG' &&
            message.test(error.message) &&
            !error.message.includes(good.secret),
          JSON.stringify(override),
        )
      }
      // Both secret forms (44 characters of Base64, or 32 UTF-8 bytes) are accepted, and a trailing slash on the URL is fine.
      assert.doesNotThrow(() => new EarshotClient({ ...good, secret: 'k'.repeat(32) }))
      assert.equal(new EarshotClient({ ...good, baseUrl: `${good.baseUrl}/` }).baseUrl, good.baseUrl)
    })
  })

  describe('tokens', () => {
    test('100 concurrent queries share one token request, and later calls reuse the token', async () => {
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch }))
      const pages = await Promise.all(
        Array.from({ length: 100 }, () => client.queryAudios({ size: 1 }, { timeoutMs: 30_000 })),
      )
      assert.ok(pages.every((page) => page.total === RECORDINGS))
      assert.equal(recorder.count('/openapi/v1/token'), 1)
      assert.equal(recorder.count('/openapi/v1/audios'), 100)
      await client.confirmReceipt(ids[0] as string)
      assert.equal(await client.token(), await client.token())
      assert.equal(recorder.count('/openapi/v1/token'), 1)
      // All 101 requests carried the one token, and every envelope had its own nonce.
      const bearers = new Set(recorder.sent.filter((s) => s.authorization).map((s) => s.authorization))
      assert.equal(bearers.size, 1)
      assert.equal(new Set(recorder.sent.map((s) => s.body.nonce)).size, recorder.sent.length)
    })

    test('a token is renewed 5 minutes before it expires (by the injected clock)', async () => {
      let now = Date.now()
      // The platform's clock moves with the client's, so that its issuedAt stays fresh.
      const advance = (ms: number) => {
        now += ms
        platformOffsetMs += ms
      }
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch, clock: () => now }))
      try {
        const first = await client.accessToken()
        assert.equal(first.expiresIn, 7200)
        assert.equal(first.expiresAt, now + 7_200_000)
        advance(7_200_000 - 5 * 60_000 - 1)
        assert.equal(await client.token(), first.accessToken)
        assert.equal(recorder.count('/openapi/v1/token'), 1)
        advance(1)
        const second = await client.token()
        assert.notEqual(second, first.accessToken)
        assert.equal(recorder.count('/openapi/v1/token'), 2)
        await client.queryAudios({ size: 1 })
        assert.equal(recorder.sent.at(-1)?.authorization, `Bearer ${second}`)
      } finally {
        platformOffsetMs = 0
      }
    })

    test("every request carries issuedAt, the client clock's seconds: an enterprise requiring it takes them", async () => {
      const strict = await createPartner(platform, 'Strict Co')
      await adminCall(platform, 'updateEnterprise', {
        params: { enterpriseId: strict.enterpriseId },
        body: { requireIssuedAt: true },
      })
      const audioId = await ingest(platform, strict.enterpriseId, recording(RECORDINGS))
      const now = Date.now() + 0.999
      const recorder = recordingFetch()
      const client = new EarshotClient({
        baseUrl: platform.partnerUrl,
        enterpriseId: strict.enterpriseId,
        keyVersion: strict.keyVersion,
        secret: strict.secret,
        fetch: recorder.fetch,
        clock: () => now,
      })
      assert.equal((await client.queryAudios({ size: 1 })).total, 1)
      await client.changes({ size: 1 })
      await client.confirmReceipt(audioId)
      const sent = recorder.sent.map((each) => [each.path, open(each.body, strict.key).plaintext.issuedAt])
      const issuedAt = Math.floor(now / 1000)
      assert.deepEqual(sent, [
        ['/openapi/v1/token', issuedAt],
        ['/openapi/v1/audios', issuedAt],
        ['/openapi/v1/audios/changes', issuedAt],
        ['/openapi/v1/callback', issuedAt],
      ])
    })

    test('a short-lived token (platform TTL 2 s) is renewed at half its life', async () => {
      const shortLived = await startTestPlatform('pglite', { tokenTtlSeconds: 2 })
      try {
        const other = await createPartner(shortLived, 'Short Co')
        const start = Date.now()
        let now = start
        const recorder = recordingFetch()
        const client = new EarshotClient({
          baseUrl: shortLived.partnerUrl,
          enterpriseId: other.enterpriseId,
          keyVersion: other.keyVersion,
          secret: other.secret,
          fetch: recorder.fetch,
          clock: () => now,
        })
        const first = await client.token()
        now = start + 999
        assert.equal(await client.token(), first)
        now = start + 1000
        assert.notEqual(await client.token(), first)
        assert.equal(recorder.count('/openapi/v1/token'), 2)
      } finally {
        await shortLived.stop()
      }
    })

    test('4011: a token the platform says has expired is dropped and the call retried once', async () => {
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch }))
      const stale = await client.token()
      platformOffsetMs = 7201 * 1000
      try {
        const page = await client.queryAudios({ size: 5 })
        assert.equal(page.total, RECORDINGS)
        assert.equal(recorder.count('/openapi/v1/token'), 2)
        assert.equal(recorder.count('/openapi/v1/audios'), 2)
        const [refused, accepted] = recorder.sent.filter((s) => s.path === '/openapi/v1/audios')
        assert.equal(refused?.authorization, `Bearer ${stale}`)
        assert.notEqual(accepted?.authorization, `Bearer ${stale}`)
        assert.notEqual(refused?.body.nonce, accepted?.body.nonce)
        // The new token is cached: the next call needs no token request.
        await client.confirmReceipt(ids[1] as string)
        assert.equal(recorder.count('/openapi/v1/token'), 2)
      } finally {
        platformOffsetMs = 0
      }
    })

    test('4010: refused once → new token, retried once; refused again → EarshotApiError 4010', async () => {
      const onceProxy = await startProxy(platform.partnerUrl, (path, n) =>
        path === '/openapi/v1/callback' && n === 0
          ? { forward: { authorization: 'Bearer forged' } }
          : undefined,
      )
      const alwaysProxy = await startProxy(platform.partnerUrl, (path) =>
        path === '/openapi/v1/callback' ? { forward: { authorization: 'Bearer forged' } } : undefined,
      )
      try {
        const once = new EarshotClient(options({ baseUrl: onceProxy.url }))
        await once.confirmReceipt(ids[2] as string)
        const paths = onceProxy.arrived.map((each) => each.path)
        assert.deepEqual(paths, [
          '/openapi/v1/token',
          '/openapi/v1/callback',
          '/openapi/v1/token',
          '/openapi/v1/callback',
        ])

        const always = new EarshotClient(options({ baseUrl: alwaysProxy.url }))
        const error = await rejectsWith(always.confirmReceipt(ids[2] as string), EarshotApiError)
        assert.equal(error.code, 4010)
        assert.equal(error.name, 'UNAUTHORIZED')
        assert.equal(error.httpStatus, 401)
        assert.equal(alwaysProxy.arrived.filter((each) => each.path === '/openapi/v1/callback').length, 2)
        assert.equal(alwaysProxy.arrived.filter((each) => each.path === '/openapi/v1/token').length, 2)
      } finally {
        await onceProxy.close()
        await alwaysProxy.close()
      }
    })

    test('4012: a wrong secret fails the token request without retrying', async () => {
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch, secret: 'w'.repeat(32) }))
      const error = await rejectsWith(client.queryAudios(), EarshotApiError)
      assert.equal(error.code, 4012)
      assert.equal(error.name, 'DECRYPTION_FAILED')
      assert.equal(recorder.sent.length, 1)
    })

    test("one caller's abort does not fail the shared token request of the others", async () => {
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch }))
      const controller = new AbortController()
      const aborted = client.token({ signal: controller.signal })
      const other = client.token()
      controller.abort(new Error('gave up'))
      await assert.rejects(aborted, { message: 'gave up' })
      assert.equal(typeof (await other), 'string')
      assert.equal(recorder.count('/openapi/v1/token'), 1)
    })
  })

  describe('query', () => {
    test('45 recordings, size 10: five pages, every recording once, newest first', async () => {
      const client = new EarshotClient(options())
      const pages = []
      for await (const page of client.iterateAudios({ size: 10 })) pages.push(page)
      assert.deepEqual(
        pages.map((page) => [page.page, page.size, page.total, page.items.length]),
        [
          [1, 10, 45, 10],
          [2, 10, 45, 10],
          [3, 10, 45, 10],
          [4, 10, 45, 10],
          [5, 10, 45, 5],
        ],
      )
      const seen = pages.flatMap((page) => page.items.map((item) => item.audioId))
      assert.deepEqual(seen, [...ids].reverse())
      for (const page of pages) assert.equal(page.specVersion, '1')
    })

    test('items carry the data as sent, and parsed sentences for the transcript form', async () => {
      const client = new EarshotClient(options())
      const page = await client.queryAudios({ audioId: 'rec-04' })
      assert.equal(page.total, 1)
      const [item] = page.items
      assert.ok(item && isTranscriptData(item.data))
      assert.equal(typeof item.data.transcriptSentences, 'string')
      assert.deepEqual(item.sentences, [
        { text: 'hello', beginTime: 0, endTime: 500 },
        { text: '4', beginTime: 500, endTime: 900 },
      ])
      const audioOnly = (await client.queryAudios({ audioId: 'rec-05' })).items[0]
      assert.deepEqual(audioOnly, {
        audioId: 'rec-05',
        data: {
          deviceUid: 'dev-2',
          title: 'Recording 5',
          recordedAt: '2026-01-01T00:05:00.000Z',
          denoiseUrl: 'https://media.example/5.mp3',
          recordDuration: 60_005,
        },
      })
    })

    test('filters reach the platform; iteration starts at filter.page', async () => {
      const client = new EarshotClient(options())
      const device = await client.queryAudios({ deviceUid: 'dev-0', size: 100 })
      assert.equal(device.total, 15)
      assert.ok(device.items.every((item) => item.data.deviceUid === 'dev-0'))
      const window = await client.queryAudios({
        startTime: '2026-01-01T00:10:00Z',
        endTime: '2026-01-01T09:20:00+09:00',
      })
      assert.deepEqual(
        window.items.map((item) => item.audioId),
        Array.from({ length: 10 }, (_, i) => `rec-${19 - i}`),
      )
      const pages = []
      for await (const page of client.iterateAudios({ size: 20, page: 2 })) pages.push(page)
      assert.deepEqual(
        pages.map((page) => [page.page, page.items.length]),
        [
          [2, 20],
          [3, 5],
        ],
      )
      // Nothing matches: one empty page, then the iteration ends.
      const none = []
      for await (const page of client.iterateAudios({ deviceUid: 'nobody' })) none.push(page)
      assert.deepEqual(
        none.map((page) => [page.total, page.items.length]),
        [[0, 0]],
      )
    })

    test('a filter breaking its rule is refused locally as 4001 naming the field, nothing sent', async () => {
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch }))
      const cases: [JsonObject, string][] = [
        [{ size: 101 }, 'size'],
        [{ page: 0 }, 'page'],
        [{ startTime: '2026-01-01T00:00:00' }, 'startTime'],
        [{ startTime: '2026-01-02T00:00:00Z', endTime: '2026-01-01T00:00:00Z' }, 'startTime'],
        [{ colour: 'red' }, 'colour'],
        [{ audioId: '' }, 'audioId'],
      ]
      for (const [filter, field] of cases) {
        const error = await rejectsWith(client.queryAudios(filter), EarshotApiError)
        assert.equal(error.code, 4001)
        assert.equal(error.name, 'INVALID_PARAMETER')
        assert.ok(error.msg.startsWith(`${field}: `), error.msg)
        assert.equal(error.requestId, undefined)
        assert.equal(error.httpStatus, undefined)
      }
      await rejectsWith(client.confirmReceipt(''), EarshotApiError)
      // Undefined fields are left out rather than refused.
      await client.queryAudios({ audioId: undefined, size: 2 })
      assert.equal(recorder.count('/openapi/v1/audios'), 1)
    })
  })

  describe('change feed', () => {
    /** An enterprise of its own: its feed holds only what these tests did. */
    let feed: TestPartner
    const feedClient = (extra: Partial<EarshotClientOptions> = {}) =>
      new EarshotClient({ ...options(), ...feed, baseUrl: platform.partnerUrl, ...extra })

    before(async () => {
      feed = await createPartner(platform, 'Feed Co')
      for (let i = 0; i < 12; i++) {
        await ingest(platform, feed.enterpriseId, { ...recording(i), audioId: `feed-${i}` })
      }
    })

    test('iterateChanges follows nextCursor until hasMore is false; the last cursor waits for later changes', async () => {
      const recorder = recordingFetch()
      const client = feedClient({ fetch: recorder.fetch })
      const pages = []
      for await (const page of client.iterateChanges({ size: 5 })) pages.push(page)
      assert.deepEqual(
        pages.map((page) => [page.items.length, page.hasMore]),
        [
          [5, true],
          [5, true],
          [2, false],
        ],
      )
      assert.equal(recorder.count('/openapi/v1/audios/changes'), 3)
      const items = pages.flatMap((page) => page.items)
      assert.deepEqual(
        items.map((item) => [item.audioId, item.change]),
        Array.from({ length: 12 }, (_, i) => [`feed-${i}`, 'created']),
      )
      assert.ok(items.every((item, i) => i === 0 || item.seq > (items[i - 1]?.seq as number)))
      for (const page of pages) assert.equal(page.specVersion, '1')
      // The transcript form comes with its sentences parsed, as in the query.
      const withTranscript = items[4]
      assert.ok(withTranscript?.data && isTranscriptData(withTranscript.data))
      assert.deepEqual(withTranscript.sentences, [
        { text: 'hello', beginTime: 0, endTime: 500 },
        { text: '4', beginTime: 500, endTime: 900 },
      ])
      assert.equal(items[5]?.sentences, undefined)

      const cursor = pages.at(-1)?.nextCursor as string
      assert.deepEqual(await client.changes({ cursor }), {
        specVersion: '1',
        items: [],
        nextCursor: cursor,
        hasMore: false,
        lagSeconds: 0,
      })
      const { enterpriseId } = feed
      await adminCall(platform, 'updateRecording', {
        params: { enterpriseId, audioId: 'feed-1' },
        body: { title: 'renamed' },
      })
      const gone = await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId, audioId: 'feed-2' },
      })
      assert.deepEqual(gone, { deleted: 'feed-2' })
      const later = await client.changes({ cursor })
      assert.deepEqual(
        later.items.map(({ audioId, change, data }) => [audioId, change, data?.title]),
        [
          ['feed-1', 'updated', 'renamed'],
          ['feed-2', 'deleted', undefined],
        ],
      )
      assert.equal(later.hasMore, false)
      // Read again from the start: the deleted recording's earlier entry has no data any more, and
      // every entry carries the recording's current data.
      const first = await client.changes({ size: 3 })
      assert.deepEqual(
        first.items.map(({ audioId, data }) => [audioId, data?.title]),
        [
          ['feed-0', 'Recording 0'],
          ['feed-1', 'renamed'],
          ['feed-2', undefined],
        ],
      )
    })

    test('a request breaking its rule is refused locally as 4001; a cursor the feed did not give by the platform', async () => {
      const recorder = recordingFetch()
      const client = feedClient({ fetch: recorder.fetch })
      const cases: [JsonObject, string][] = [
        [{ size: 0 }, 'size'],
        [{ size: 101 }, 'size'],
        [{ cursor: '' }, 'cursor'],
        [{ page: 2 }, 'page'],
      ]
      for (const [request, field] of cases) {
        const error = await rejectsWith(client.changes(request), EarshotApiError)
        assert.equal(error.code, 4001)
        assert.ok(error.msg.startsWith(`${field}: `), error.msg)
        assert.equal(error.httpStatus, undefined)
      }
      assert.equal(recorder.count('/openapi/v1/audios/changes'), 0)

      const refused = await rejectsWith(client.changes({ cursor: 'not-a-cursor' }), EarshotApiError)
      assert.equal(refused.code, 4001)
      assert.equal(refused.httpStatus, 400)
      assert.match(refused.msg, /^cursor: /)
      assert.equal(typeof refused.requestId, 'string')
      // Not retried, and the iterator raises it as well.
      assert.equal(recorder.count('/openapi/v1/audios/changes'), 1)
      await assert.rejects(
        async () => {
          for await (const _ of client.iterateChanges({ cursor: 'not-a-cursor' })) assert.fail('no page')
        },
        { code: 4001 },
      )
    })

    test('a page that does not open under the key is refused', async () => {
      const client = feedClient()
      const proxy = await startProxy(platform.partnerUrl, (path) =>
        path === '/openapi/v1/audios/changes'
          ? { answer: { status: 200, body: { code: 2000, msg: 'success', data: { not: 'an envelope' } } } }
          : undefined,
      )
      try {
        const viaProxy = feedClient({ baseUrl: proxy.url })
        const error = await rejectsWith(viaProxy.changes(), EarshotResponseError)
        assert.match(error.message, /^the change feed response data cannot be opened/)
      } finally {
        await proxy.close()
      }
      assert.equal((await client.changes({ size: 1 })).items.length, 1)
    })
  })

  describe('receipt callback', () => {
    test('confirming twice succeeds both times; an unknown audioId is 4040, not retried', async () => {
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ fetch: recorder.fetch }))
      await client.confirmReceipt(ids[3] as string)
      await client.confirmReceipt(ids[3] as string)
      const error = await rejectsWith(client.confirmReceipt('no-such-recording'), EarshotApiError)
      assert.equal(error.code, 4040)
      assert.equal(error.name, 'NOT_FOUND')
      assert.equal(error.httpStatus, 404)
      assert.match(error.msg, /no-such-recording/)
      assert.equal(typeof error.requestId, 'string')
      assert.equal(error.message, `error 4040: ${error.msg}`)
      assert.equal(recorder.count('/openapi/v1/callback'), 3)
    })
  })

  describe('retries', () => {
    test('5030 once: retried with a freshly sealed envelope (new nonce, same eventId)', async () => {
      const proxy = await startProxy(platform.partnerUrl, (path, n) =>
        path === '/openapi/v1/audios' && n === 0
          ? { answer: { status: 503, body: { code: 5030, msg: 'shutting down', requestId: 'r-1' } } }
          : undefined,
      )
      try {
        const client = new EarshotClient(options({ baseUrl: proxy.url }))
        const page = await client.queryAudios({ size: 3 })
        assert.equal(page.items.length, 3)
        const [first, second] = proxy.arrived.filter((each) => each.path === '/openapi/v1/audios')
        assert.ok(first && second)
        assert.notEqual(first.body.nonce, second.body.nonce)
        assert.notEqual(first.body.ciphertext, second.body.ciphertext)
        assert.equal(first.body.eventId, second.body.eventId)
        // Both envelopes are authentic and carry the same filter, each with when it was sealed.
        for (const each of [first, second]) {
          const { issuedAt, ...filter } = open(each.body, partner.key).plaintext
          assert.deepEqual(filter, { size: 3 })
          assert.ok(Number.isSafeInteger(issuedAt))
        }
      } finally {
        await proxy.close()
      }
    })

    test('a connection cut once is retried; 5000 is retried; the token request is retried too', async () => {
      const proxy = await startProxy(platform.partnerUrl, (path, n) => {
        if (path === '/openapi/v1/token' && n === 0) return 'destroy'
        if (path === '/openapi/v1/callback' && n === 0) return 'destroy'
        if (path === '/openapi/v1/callback' && n === 1) {
          return { answer: { status: 500, body: { code: 5000, msg: 'internal error' } } }
        }
        return undefined
      })
      try {
        const client = new EarshotClient(options({ baseUrl: proxy.url }))
        await client.confirmReceipt(ids[4] as string)
        const callbacks = proxy.arrived.filter((each) => each.path === '/openapi/v1/callback')
        assert.equal(callbacks.length, 3)
        assert.equal(new Set(callbacks.map((each) => each.body.nonce)).size, 3)
        const tokens = proxy.arrived.filter((each) => each.path === '/openapi/v1/token')
        assert.equal(tokens.length, 2)
        assert.notEqual(tokens[0]?.body.nonce, tokens[1]?.body.nonce)
      } finally {
        await proxy.close()
      }
    })

    test('4290 waits the Retry-After seconds before retrying', async () => {
      const order: string[] = []
      const proxy = await startProxy(platform.partnerUrl, (path, n) => {
        if (path !== '/openapi/v1/audios') return undefined
        order.push(`query ${n}`)
        return n === 0
          ? {
              answer: {
                status: 429,
                body: { code: 4290, msg: 'rate limit exceeded', requestId: 'r-2' },
                headers: { 'retry-after': '1' },
              },
            }
          : undefined
      })
      try {
        // The injected wait ends only when the test says so.
        let waiting!: () => void
        const waitBegan = new Promise<void>((resolve) => {
          waiting = resolve
        })
        let endWait!: () => void
        const waitEnds = new Promise<void>((resolve) => {
          endWait = resolve
        })
        const client = new EarshotClient(
          options({
            baseUrl: proxy.url,
            sleep: async (ms) => {
              order.push(`wait ${ms} ms`)
              waiting()
              await waitEnds
              order.push('waited')
            },
          }),
        )
        await client.token()
        const query = client.queryAudios({ size: 1 })
        await waitBegan
        assert.deepEqual(order, ['query 0', 'wait 1000 ms'], 'no retry while the Retry-After lasts')
        endWait()
        assert.equal((await query).items.length, 1)
        assert.deepEqual(order, ['query 0', 'wait 1000 ms', 'waited', 'query 1'])
      } finally {
        await proxy.close()
      }
    })

    test('other 4xxx codes and non-Earshot answers are not retried', async () => {
      const proxy = await startProxy(platform.partnerUrl, (path) => {
        if (path === '/openapi/v1/audios') {
          return { answer: { status: 400, body: { code: 4001, msg: 'size: must be <= 100' } } }
        }
        if (path === '/openapi/v1/callback') return { answer: { status: 404, body: 'not found' } }
        return undefined
      })
      try {
        const client = new EarshotClient(options({ baseUrl: proxy.url }))
        const error = await rejectsWith(client.queryAudios(), EarshotApiError)
        assert.equal(error.code, 4001)
        assert.equal(error.msg, 'size: must be <= 100')
        const notEarshot = await rejectsWith(client.confirmReceipt('x'), EarshotResponseError)
        assert.equal(notEarshot.code, 'ERR_EARSHOT_RESPONSE')
        assert.equal(notEarshot.httpStatus, 404)
        assert.deepEqual(
          proxy.arrived.map((each) => each.path),
          ['/openapi/v1/token', '/openapi/v1/audios', '/openapi/v1/callback'],
        )
      } finally {
        await proxy.close()
      }
    })

    test('an unreachable platform: EarshotNetworkError after the configured retries', async () => {
      const closed = await startProxy(platform.partnerUrl, () => undefined)
      await closed.close()
      const recorder = recordingFetch()
      const client = new EarshotClient(options({ baseUrl: closed.url, retries: 2, fetch: recorder.fetch }))
      const error = await rejectsWith(client.token(), EarshotNetworkError)
      assert.equal(error.code, 'ERR_EARSHOT_NETWORK')
      assert.match(error.message, /ECONNREFUSED/)
      assert.equal(recorder.sent.length, 3)
    })

    test('response data that does not open under the key is refused', async () => {
      const proxy = await startProxy(platform.partnerUrl, (path) =>
        path === '/openapi/v1/audios'
          ? { answer: { status: 200, body: { code: 2000, msg: 'success', data: { not: 'an envelope' } } } }
          : undefined,
      )
      try {
        const client = new EarshotClient(options({ baseUrl: proxy.url }))
        const error = await rejectsWith(client.queryAudios(), EarshotResponseError)
        assert.match(error.message, /cannot be opened/)
      } finally {
        await proxy.close()
      }
    })
  })

  describe('timeouts and aborts', () => {
    test('an attempt that takes too long times out; each attempt is bounded, then it gives up', async () => {
      const proxy = await startProxy(platform.partnerUrl, (path) =>
        path === '/openapi/v1/token' ? undefined : 'hang',
      )
      try {
        // Each attempt as the client runs it: sent, then ended by its own signal.
        const attempts: string[] = []
        const watched: typeof fetch = (input, init) => {
          const path = new URL(String(input)).pathname
          attempts.push(`send ${path}`)
          init?.signal?.addEventListener('abort', () => attempts.push(`abort ${path}`), { once: true })
          return fetch(input, init)
        }
        const client = new EarshotClient(
          options({ baseUrl: proxy.url, retries: 1, timeoutMs: 150, fetch: watched }),
        )
        await client.token()
        attempts.length = 0
        const error = await rejectsWith(client.queryAudios(), EarshotTimeoutError)
        assert.equal(error.code, 'ERR_EARSHOT_TIMEOUT')
        assert.equal(error.timeoutMs, 150)
        // The proxy never answers: each attempt ended by its timeout before the next began, then it gave up.
        const audios = '/openapi/v1/audios'
        assert.deepEqual(attempts, [`send ${audios}`, `abort ${audios}`, `send ${audios}`, `abort ${audios}`])
        assert.equal(proxy.arrived.filter((each) => each.path === audios).length, 2)
        // The per-call timeout overrides the client's.
        attempts.length = 0
        const quick = await rejectsWith(client.confirmReceipt('x', { timeoutMs: 50 }), EarshotTimeoutError)
        assert.equal(quick.timeoutMs, 50)
        const callback = '/openapi/v1/callback'
        assert.deepEqual(attempts, [
          `send ${callback}`,
          `abort ${callback}`,
          `send ${callback}`,
          `abort ${callback}`,
        ])
      } finally {
        await proxy.close()
      }
    })

    test("the caller's AbortSignal stops the request and every retry", async () => {
      let unavailable = 0
      let queryArrived!: () => void
      const hanging = new Promise<void>((resolve) => {
        queryArrived = resolve
      })
      const proxy = await startProxy(platform.partnerUrl, (path) => {
        if (path === '/openapi/v1/audios') {
          queryArrived()
          return 'hang'
        }
        if (path === '/openapi/v1/callback') {
          unavailable++
          return {
            answer: {
              status: 503,
              body: { code: 5030, msg: 'unavailable' },
              headers: { 'retry-after': '1' },
            },
          }
        }
        return undefined
      })
      try {
        // The wait between retries (the 5030's Retry-After) ends only by its signal.
        const waits: (AbortSignal | undefined)[] = []
        let waiting!: () => void
        const waitBegan = new Promise<void>((resolve) => {
          waiting = resolve
        })
        const sleep = (_ms: number, signal: AbortSignal | undefined) =>
          new Promise<void>((_resolve, reject) => {
            waits.push(signal)
            signal?.addEventListener('abort', () => reject(signal.reason), { once: true })
            waiting()
          })
        const client = new EarshotClient(options({ baseUrl: proxy.url, retries: 10, sleep }))
        await client.token()

        // Aborted while the request hangs at the proxy: the call rejects and the connection is closed.
        const during = new AbortController()
        const query = client.queryAudios({}, { signal: during.signal })
        await hanging
        during.abort(new Error('stop waiting'))
        await assert.rejects(query, { message: 'stop waiting' })
        await eventually(
          async () => proxy.cutOff.includes('/openapi/v1/audios'),
          10_000,
          'the hanging query cut off',
        )

        // Aborted while waiting between retries: the wait got the caller's signal, and nothing was sent after.
        const between = new AbortController()
        const pending = client.confirmReceipt('x', { signal: between.signal })
        await waitBegan
        assert.equal(unavailable, 1)
        between.abort()
        await assert.rejects(pending, { name: 'AbortError' })
        assert.deepEqual(waits, [between.signal], 'one wait, given the signal of the call')
        assert.equal(unavailable, 1)

        // Already aborted: nothing is sent.
        const before = proxy.arrived.length
        await assert.rejects(client.queryAudios({}, { signal: AbortSignal.abort() }), { name: 'AbortError' })
        assert.equal(proxy.arrived.length, before)
        // A request sent after all that reaches the proxy with nothing of the aborted calls before it.
        await new EarshotClient(options({ baseUrl: proxy.url })).token()
        assert.deepEqual(
          proxy.arrived.slice(before).map((each) => each.path),
          ['/openapi/v1/token'],
        )
        assert.equal(unavailable, 1)
      } finally {
        await proxy.close()
      }
    })
  })
})
