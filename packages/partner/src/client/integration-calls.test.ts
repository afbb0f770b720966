import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, afterEach, before, describe, test } from 'node:test'
import type { JsonObject } from '@earshot/protocol'
import { eventually, latch } from '@earshot/test-kit/eventually'
import { EarshotClient } from './earshot-client.js'
import { EarshotApiError, EarshotResponseError } from './errors.js'
import { FAKE_ENTERPRISE, type FakeApi, startFakeApi } from './fake-earshot.test.support.js'

/*
 * The calls that manage a partner's integration, against the kit's stand-in for the platform: each is one
 * request sealed with the client's key and sent with a token, its answer opened; deliveries are paged by
 * cursor; a key rotation moves the client to the new key.
 */

const secret = randomBytes(32).toString('base64')
const newSecret = randomBytes(32).toString('base64')

const endpoint = {
  endpointId: 3,
  enterpriseId: FAKE_ENTERPRISE.enterpriseId,
  url: 'https://partner.example/earshot/push',
  eventTypes: ['recording.transcript_ready'],
  description: 'transcripts',
  enabled: true,
  maxPerSecond: null,
  createdAt: '2026-11-01T00:00:00.000Z',
  health: { state: 'healthy', reason: null, lastSuccessAt: null, lastFailureAt: null },
  waiting: 0,
}

const delivery = (deliveryId: number) => ({
  deliveryId,
  endpointId: 3,
  eventId: `evt-${deliveryId}`,
  eventType: 'recording.transcript_ready',
  audioId: `aud-${deliveryId}`,
  state: 'failed',
  createdAt: '2026-11-01T00:00:00.000Z',
  attempts: [{ startedAt: '2026-11-01T00:00:01.000Z', durationMs: 12, httpStatus: 500, answer: 'down' }],
})

/** What a call's request held, without the issuedAt the client adds to each. */
const plaintextOf = (api: FakeApi, path: string) =>
  api.calls
    .filter((call) => call.path === path)
    .map(({ plaintext: { issuedAt, ...rest } }) => {
      assert.equal(typeof issuedAt, 'number')
      return rest
    })

describe('the integration calls', { timeout: 30_000 }, () => {
  let api: FakeApi
  let client: EarshotClient

  before(async () => {
    api = await startFakeApi(secret)
  })
  after(async () => {
    await api?.close()
  })
  afterEach(() => {
    api.calls.length = 0
    api.routes.clear()
  })
  const newClient = () => new EarshotClient({ ...FAKE_ENTERPRISE, baseUrl: api.url, secret, retries: 0 })

  test('each is one sealed request with a token to its path; its answer opened', async () => {
    client = newClient()
    const answers: Record<string, JsonObject> = {
      '/openapi/v1/endpoints/list': { items: [endpoint] },
      '/openapi/v1/endpoints/add': endpoint,
      '/openapi/v1/endpoints/update': { ...endpoint, enabled: false },
      '/openapi/v1/endpoints/remove': { endpointId: 3, cancelled: 2 },
      '/openapi/v1/endpoints/check': {
        url: endpoint.url,
        enterpriseId: 7,
        keyVersion: 1,
        passed: true,
        items: [],
      },
      '/openapi/v1/deliveries/replay': { replayed: 4 },
      '/openapi/v1/levels': {
        firstAttemptP50Ms: 10,
        firstAttemptP95Ms: 90,
        firstAttemptAckShare: 0.5,
        ackToReceiptP95Ms: null,
        backlog: 1,
      },
      '/openapi/v1/portal/link': { url: 'https://earshot.example/portal/enter/x', expiresAt: 'soon' },
    }
    for (const [path, data] of Object.entries(answers)) api.routes.set(path, () => data)

    assert.deepEqual(await client.listEndpoints(), answers['/openapi/v1/endpoints/list'])
    const added = await client.addEndpoint({ url: endpoint.url, eventTypes: ['transcript_ready'] })
    assert.deepEqual(added, endpoint)
    await client.updateEndpoint(3, { enabled: false, description: undefined })
    assert.deepEqual(await client.removeEndpoint(3), { endpointId: 3, cancelled: 2 })
    assert.equal((await client.checkReceiver(endpoint.url)).passed, true)
    assert.deepEqual(await client.replayDelivery(9), { replayed: 4 })
    await client.replaySince({ since: '2026-11-01T00:00:00Z' })
    await client.replaySince({ since: '2026-11-02T00:00:00Z', states: ['failed'] })
    assert.deepEqual(await client.levels(), answers['/openapi/v1/levels'])
    await client.levels('7d')
    assert.deepEqual(await client.portalLink({ access: 'view' }), answers['/openapi/v1/portal/link'])

    assert.deepEqual(plaintextOf(api, '/openapi/v1/endpoints/add'), [
      { url: endpoint.url, eventTypes: ['transcript_ready'] },
    ])
    assert.deepEqual(plaintextOf(api, '/openapi/v1/endpoints/update'), [{ enabled: false, endpointId: 3 }])
    assert.deepEqual(plaintextOf(api, '/openapi/v1/endpoints/check'), [{ url: endpoint.url }])
    assert.deepEqual(plaintextOf(api, '/openapi/v1/deliveries/replay'), [
      { deliveryId: 9 },
      { states: ['failed', 'unconfirmed'], since: '2026-11-01T00:00:00Z' },
      { states: ['failed'], since: '2026-11-02T00:00:00Z' },
    ])
    assert.deepEqual(plaintextOf(api, '/openapi/v1/levels'), [{ window: '24h' }, { window: '7d' }])
    assert.deepEqual(plaintextOf(api, '/openapi/v1/portal/link'), [{ access: 'view' }])
    const sent = api.calls.filter((call) => call.path !== '/openapi/v1/token')
    assert.equal(sent.length, 11)
    assert.ok(sent.every((call) => call.token?.startsWith('fake-1-') && call.keyVersion === 1))
    assert.equal(api.calls.filter((call) => call.path === '/openapi/v1/token').length, 1, 'one token')
  })

  test('deliveries: one page, or every page by nextCursor with the same filters', async () => {
    client = newClient()
    const all = Array.from({ length: 45 }, (_, i) => delivery(45 - i))
    api.routes.set('/openapi/v1/deliveries/list', (plaintext) => {
      const from = Number(plaintext.cursor ?? 0)
      const size = Number(plaintext.size ?? 20)
      const items = all.slice(from, from + size)
      const more = from + size < all.length
      return { items, nextCursor: more ? String(from + size) : null, hasMore: more }
    })
    const first = await client.listDeliveries({ state: 'failed', size: 20 })
    assert.deepEqual(
      first.items.map((item) => item.deliveryId),
      all.slice(0, 20).map((item) => item.deliveryId),
    )
    assert.deepEqual([first.nextCursor, first.hasMore], ['20', true])
    assert.deepEqual(first.items[0]?.attempts, delivery(45).attempts)

    api.calls.length = 0
    const pages = []
    for await (const page of client.iterateDeliveries({ state: 'failed', audioId: undefined, size: 20 })) {
      pages.push(page.items.length)
    }
    assert.deepEqual(pages, [20, 20, 5])
    assert.deepEqual(plaintextOf(api, '/openapi/v1/deliveries/list'), [
      { state: 'failed', size: 20 },
      { state: 'failed', size: 20, cursor: '20' },
      { state: 'failed', size: 20, cursor: '40' },
    ])
  })

  test('a plaintext off its contract is refused before sending; an answer off it is refused too', async () => {
    client = newClient()
    await assert.rejects(
      client.listDeliveries({ size: 101 }),
      (error: unknown) =>
        error instanceof EarshotApiError && error.code === 4001 && /size/.test(error.message),
    )
    await assert.rejects(client.levels('1y' as never), { code: 4001 })
    assert.deepEqual(api.calls, [], 'nothing was sent')
    api.routes.set('/openapi/v1/endpoints/list', () => ({ endpoints: [] }))
    await assert.rejects(
      client.listEndpoints(),
      (error: unknown) =>
        error instanceof EarshotResponseError &&
        /listEndpoints response data is not what its contract says/.test(error.message),
    )
  })

  test('rotateKey: the answer opened with the old key; later calls and a new token use the new one', async () => {
    client = newClient()
    api.routes.set('/openapi/v1/endpoints/list', () => ({ items: [] }))
    api.routes.set('/openapi/v1/key/rotate', () => {
      api.addKey(2, newSecret)
      return { keyVersion: 2, secret: newSecret }
    })
    await client.listEndpoints()
    assert.deepEqual(await client.rotateKey(), { keyVersion: 2, secret: newSecret })
    assert.equal(client.keyVersion, 2)
    assert.deepEqual(await client.listEndpoints(), { items: [] })

    const [rotation] = api.calls.filter((call) => call.path === '/openapi/v1/key/rotate')
    assert.equal(rotation?.keyVersion, 1, 'the rotation itself was sealed with the old key')
    const after = api.calls.slice(api.calls.indexOf(rotation as never) + 1)
    assert.deepEqual(
      after.map((call) => [call.path, call.keyVersion]),
      [
        ['/openapi/v1/token', 2],
        ['/openapi/v1/endpoints/list', 2],
      ],
    )
    assert.match(after[1]?.token ?? '', /^fake-2-/, 'with a token of the new key')
  })

  test('a call sealed before a rotation is opened with the key it was sealed with', async () => {
    client = newClient()
    const gate = latch()
    api.routes.set('/openapi/v1/levels', async () => {
      await gate.done
      return {
        firstAttemptP50Ms: null,
        firstAttemptP95Ms: null,
        firstAttemptAckShare: null,
        ackToReceiptP95Ms: null,
        backlog: 0,
      }
    })
    api.routes.set('/openapi/v1/key/rotate', () => {
      api.addKey(3, newSecret)
      return { keyVersion: 3, secret: newSecret }
    })
    const levels = client.levels()
    await eventually(
      async () => api.calls.some((call) => call.path === '/openapi/v1/levels'),
      5_000,
      'the levels request',
    )
    await client.rotateKey()
    gate.signal()
    assert.equal((await levels).backlog, 0)
    assert.equal(client.keyVersion, 3)
  })

  test('a rotation that fails leaves the client on its key', async () => {
    client = newClient()
    api.routes.set('/openapi/v1/key/rotate', () => {
      throw new Error('the stand-in answers 500')
    })
    await assert.rejects(client.rotateKey(), { code: 'ERR_EARSHOT_RESPONSE' })
    assert.equal(client.keyVersion, 1)
    api.routes.set('/openapi/v1/endpoints/list', () => ({ items: [] }))
    await client.listEndpoints()
    assert.equal(api.calls.at(-1)?.keyVersion, 1)
  })
})
