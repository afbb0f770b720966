import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, afterEach, before, describe, test } from 'node:test'
import { type JsonObject, PartnerOperation } from '@earshot/protocol'
import { eventually } from '@earshot/test-kit/eventually'
import type { RequestOptions } from './client-types.js'
import { EarshotClient } from './earshot-client.js'
import { EarshotApiError, EarshotNetworkError, EarshotResponseError, EarshotTimeoutError } from './errors.js'
import {
  FAKE_ENTERPRISE,
  type FakeApi,
  FakeCut,
  FakeRefusal,
  startFakeApi,
} from './fake-earshot.test.support.js'

/*
 * The calls a second copy of would act twice (the contract's atMostOnce: another endpoint, another removal,
 * check, replay or rotation; a resend is sealed with a fresh nonce, so the replay guard would not stop it)
 * are sent again only after a refusal that shows nothing was done: a connection never made, 5030, a 4290
 * waited out. After a timeout, a cut connection, 5000 or a gateway's 502-504 the error surfaces and the
 * platform saw one request. The other calls are still retried after those.
 */

const secret = randomBytes(32).toString('base64')
const newSecret = randomBytes(32).toString('base64')

const endpoint = {
  endpointId: 3,
  enterpriseId: FAKE_ENTERPRISE.enterpriseId,
  url: 'https://partner.example/earshot/push',
  eventTypes: ['recording.transcript_ready'],
  description: '',
  enabled: true,
  maxPerSecond: null,
  createdAt: '2026-11-01T00:00:00.000Z',
  health: { state: 'healthy', reason: null, lastSuccessAt: null, lastFailureAt: null },
  waiting: 0,
}
const report = { url: endpoint.url, enterpriseId: 7, keyVersion: 1, passed: true, items: [] }

interface AtMostOnceCall {
  path: string
  data: JsonObject
  send: (client: EarshotClient, options: RequestOptions) => Promise<unknown>
}

/** Every operation the contract marks atMostOnce, by operationId, as the client's method sends it. */
const AT_MOST_ONCE: Record<string, AtMostOnceCall> = {
  addEndpoint: {
    path: '/openapi/v1/endpoints/add',
    data: endpoint,
    send: (client, options) => client.addEndpoint({ url: endpoint.url }, options),
  },
  removeEndpoint: {
    path: '/openapi/v1/endpoints/remove',
    data: { endpointId: 3, cancelled: 0 },
    send: (client, options) => client.removeEndpoint(3, options),
  },
  checkEndpoint: {
    path: '/openapi/v1/endpoints/check',
    data: report,
    send: (client, options) => client.checkReceiver(endpoint.url, {}, options),
  },
  replayDeliveries: {
    path: '/openapi/v1/deliveries/replay',
    data: { replayed: 1 },
    send: (client, options) => client.replayDelivery(9, options),
  },
  rotateKey: {
    path: '/openapi/v1/key/rotate',
    data: { keyVersion: 2, secret: newSecret },
    send: (client, options) => client.rotateKey(options),
  },
}

const hang = () => new Promise<never>(() => {})
const unavailable = () => new FakeRefusal(503, { code: 5030, msg: 'shutting down', requestId: 'r-1' })

describe('calls that must not act twice', { timeout: 60_000 }, () => {
  let api: FakeApi
  let closedUrl: string

  before(async () => {
    api = await startFakeApi(secret)
    api.addKey(2, newSecret)
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`
    await new Promise<void>((resolve) => closed.close(() => resolve()))
  })
  after(async () => {
    await api?.close()
  })
  afterEach(() => {
    api.calls.length = 0
    api.routes.clear()
  })

  /** A client whose sends are counted by path; `refuseFirst` sends the first request to it to a closed port. */
  const newClient = (refuseFirst?: string) => {
    const sent: string[] = []
    const client = new EarshotClient({
      ...FAKE_ENTERPRISE,
      baseUrl: api.url,
      secret,
      retries: 3,
      sleep: async () => {},
      fetch: (input, init) => {
        const path = new URL(String(input)).pathname
        sent.push(path)
        const refused = path === refuseFirst && sent.filter((each) => each === path).length === 1
        return fetch(refused ? `${closedUrl}${path}` : input, init)
      },
    })
    return { client, sentTo: (path: string) => sent.filter((each) => each === path).length }
  }
  const arrivedAt = (path: string) => api.calls.filter((call) => call.path === path).length

  /** The route answers `first` (thrown, or hangs) to its first request, and its data afterwards. */
  const failOnce = (call: AtMostOnceCall, first: () => Promise<never> | Error) => {
    let n = 0
    api.routes.set(call.path, async () => {
      if (n++ > 0) return call.data
      const failure = first()
      if (failure instanceof Error) throw failure
      return failure
    })
  }

  test('the calls below are exactly those the contract marks atMostOnce', () => {
    const marked = Object.entries(PartnerOperation)
      .filter(([, operation]) => operation.atMostOnce)
      .map(([operationId]) => operationId)
    assert.deepEqual(marked.sort(), Object.keys(AT_MOST_ONCE).sort())
  })

  for (const [operationId, call] of Object.entries(AT_MOST_ONCE)) {
    test(`${operationId}: not resent after 5000, a gateway's 502, a cut connection or a timeout`, async () => {
      const failures: [() => Promise<never> | Error, (error: unknown) => boolean][] = [
        [
          () => new FakeRefusal(500, { code: 5000, msg: 'internal error', requestId: 'r-0' }),
          (error) => error instanceof EarshotApiError && error.code === 5000,
        ],
        [
          () => new FakeRefusal(502, '<html>bad gateway</html>'),
          (error) => error instanceof EarshotResponseError && error.httpStatus === 502,
        ],
        [() => new FakeCut(), (error) => error instanceof EarshotNetworkError],
        [hang, (error) => error instanceof EarshotTimeoutError && error.timeoutMs === 300],
      ]
      for (const [first, surfaced] of failures) {
        api.calls.length = 0
        failOnce(call, first)
        const { client, sentTo } = newClient()
        await assert.rejects(call.send(client, { timeoutMs: 300 }), surfaced)
        assert.equal(sentTo(call.path), 1, 'sent once')
        await eventually(async () => arrivedAt(call.path) > 0, 5_000, `the ${operationId} request`)
        assert.equal(arrivedAt(call.path), 1, 'the platform saw one request')
      }
    })

    test(`${operationId}: resent after 5030, a 4290 with Retry-After, or a connection refused`, async () => {
      const rateLimited = () =>
        new FakeRefusal(429, { code: 4290, msg: 'rate limit exceeded' }, { 'retry-after': '1' })
      for (const first of [unavailable, rateLimited]) {
        api.calls.length = 0
        failOnce(call, first)
        const { client, sentTo } = newClient()
        assert.deepEqual(await call.send(client, {}), call.data)
        assert.equal(sentTo(call.path), 2)
        assert.equal(arrivedAt(call.path), 2)
      }
      api.calls.length = 0
      api.routes.set(call.path, () => call.data)
      const { client, sentTo } = newClient(call.path)
      assert.deepEqual(await call.send(client, {}), call.data)
      assert.equal(sentTo(call.path), 2, 'sent again after the refused connection')
      assert.equal(arrivedAt(call.path), 1, 'the platform saw the second request only')
    })
  }

  test('a 4290 asking for longer than the client waits is not resent', async () => {
    const call = AT_MOST_ONCE.addEndpoint as AtMostOnceCall
    failOnce(call, () => new FakeRefusal(429, { code: 4290, msg: 'slow down' }, { 'retry-after': '600' }))
    const { client, sentTo } = newClient()
    await assert.rejects(call.send(client, {}), { code: 4290 })
    assert.equal(sentTo(call.path), 1)
  })

  test('a query or an update is still resent after a timeout, a cut connection or 5000', async () => {
    const list = { path: '/openapi/v1/endpoints/list', data: { items: [endpoint] } }
    const update = { path: '/openapi/v1/endpoints/update', data: endpoint }
    const failures = [hang, () => new FakeCut(), () => new FakeRefusal(500, { code: 5000, msg: 'oops' })]
    for (const first of failures) {
      api.calls.length = 0
      failOnce({ ...list, send: hang }, first)
      failOnce({ ...update, send: hang }, first)
      const { client, sentTo } = newClient()
      assert.deepEqual(await client.listEndpoints({ timeoutMs: 300 }), list.data)
      assert.deepEqual(await client.updateEndpoint(3, { enabled: true }, { timeoutMs: 300 }), endpoint)
      assert.equal(sentTo(list.path), 2)
      assert.equal(sentTo(update.path), 2)
    }
  })
})
