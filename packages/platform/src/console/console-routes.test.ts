import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { expectCode, ingest, type Reply } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import type { DeliveryView } from '../deliveries/delivery-views.js'
import type { Overview } from './overview.js'

/** The console's pages and the admin routes only it reads: overview, delivery log, replayable count. */

function recording(i: number): Record<string, unknown> {
  return {
    deviceUid: 'dev-console',
    title: `console ${i}`,
    recordedAt: '2026-03-01T10:00:00+08:00',
    denoiseUrl: `https://cdn.example/${i}.mp3`,
    recordDuration: 1000 + i,
  }
}

/** A GET of the path as written: fetch would resolve its dot segments before sending it. */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(base, { path }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        body += chunk
      })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

for (const backend of testBackends) {
  describe(`console routes (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let receiver: TestReceiver
    let enterpriseId: number
    let secret: string
    let failing = true

    async function call(method: string, path: string, body?: unknown, token = platform.adminToken) {
      const response = await fetch(`${platform.adminUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      })
      return {
        status: response.status,
        headers: response.headers,
        body: (await response.json()) as Reply['body'],
      }
    }

    async function log(query: string): Promise<{ deliveries: DeliveryView[]; nextBefore: number | null }> {
      const reply = await call('GET', `/admin/v1/delivery-log?${query}`)
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      return reply.body as unknown as { deliveries: DeliveryView[]; nextBefore: number | null }
    }

    before(async () => {
      // Two attempts per delivery, then `failed`.
      platform = await startTestPlatform(backend, { pushRetryScheduleSeconds: [0.05] })
      const created = await call('POST', '/admin/v1/enterprises', { name: 'Console Co' })
      enterpriseId = created.body.enterpriseId as number
      secret = created.body.secret as string
      receiver = await startTestReceiver(secret, {
        answer: () =>
          failing ? { status: 503, body: { code: 5030 } } : { status: 200, body: { code: 2000 } },
      })
      const set = await call('PUT', `/admin/v1/enterprises/${enterpriseId}/push-url`, {
        pushUrl: receiver.url,
      })
      assert.equal(set.status, 200, JSON.stringify(set.body))
      for (let i = 0; i < 5; i++) await ingest(platform, enterpriseId, recording(i))
      await eventually(
        async () => (await log(`enterpriseId=${enterpriseId}&state=failed`)).deliveries.length === 5,
        30_000,
        'five failed deliveries',
      )
    })

    after(async () => {
      await receiver?.close()
      await platform?.stop()
    })

    test('the overview counts deliveries by state, the last hour of attempts and every push URL', async () => {
      const reply = await call('GET', '/admin/v1/overview')
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      const overview = reply.body as unknown as Overview
      assert.equal(overview.windowSeconds, 3600)
      assert.deepEqual(overview.deliveries, {
        byState: { pending: 0, in_flight: 0, acked: 0, failed: 5, unconfirmed: 0 },
        confirmedInWindow: 0,
      })
      assert.equal(overview.queueDepth, 0)
      assert.equal(overview.push.attempts, 10)
      assert.equal(overview.push.acked, 0)
      assert.equal(overview.push.successRate, 0)
      const { p50, p99 } = overview.push.latencyMs
      assert.ok(p50 !== null && p99 !== null && p50 >= 0 && p99 >= p50, JSON.stringify(overview.push))
      assert.equal(overview.endpoints.length, 1)
      assert.equal(overview.endpoints[0]?.url, receiver.url)
      assert.equal(overview.endpoints[0]?.state, 'failing')
      assert.equal(overview.endpoints[0]?.consecutiveFailures, 10)
      assert.deepEqual(overview.endpoints[0]?.enterprises, [enterpriseId])
    })

    test('the delivery log pages newest first and filters by creation time', async () => {
      const first = await log(`enterpriseId=${enterpriseId}&limit=2`)
      assert.equal(first.deliveries.length, 2)
      assert.ok(first.nextBefore !== null)
      const second = await log(`enterpriseId=${enterpriseId}&limit=2&before=${first.nextBefore}`)
      const third = await log(`enterpriseId=${enterpriseId}&limit=2&before=${second.nextBefore}`)
      assert.equal(third.deliveries.length, 1)
      assert.equal(third.nextBefore, null, 'the last page has no cursor')
      const ids = [...first.deliveries, ...second.deliveries, ...third.deliveries].map((d) => d.deliveryId)
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => b - a),
      )
      assert.equal(new Set(ids).size, 5)
      assert.equal(first.deliveries[0]?.attempts.length, 2, 'each delivery comes with its attempts')

      const all = [...first.deliveries, ...second.deliveries, ...third.deliveries]
      const oldest = all.at(-1) as DeliveryView
      const newest = all[0] as DeliveryView
      const from = encodeURIComponent(newest.createdAt)
      const to = encodeURIComponent(new Date(Date.parse(newest.createdAt) + 1).toISOString())
      const onlyNewest = await log(`from=${from}&to=${to}`)
      assert.deepEqual(
        onlyNewest.deliveries.map((d) => d.deliveryId),
        [newest.deliveryId],
      )
      const beforeOldest = await log(`to=${encodeURIComponent(oldest.createdAt)}`)
      assert.equal(beforeOldest.deliveries.length, 0, 'to is exclusive')
    })

    test('the delivery log refuses what it does not know', async () => {
      for (const [query, msg] of [
        ['since=2026-01-01T00:00:00Z', /since: is not a filter/],
        ['from=yesterday', /from: must be an ISO-8601/],
        ['from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', /from: must be before to/],
        ['state=lost', /state: must be one of/],
        ['limit=201', /limit: must be an integer from 1 to 200/],
        ['enterpriseId=1&enterpriseId=2', /enterpriseId: must be given once/],
      ] as const) {
        const reply = await call('GET', `/admin/v1/delivery-log?${query}`)
        expectCode(reply, 4001)
        assert.match(reply.body.msg as string, msg, query)
      }
    })

    test('the replayable count is what the range replay then replays', async () => {
      const range = { from: '2020-01-01T00:00:00Z', to: new Date(Date.now() + 60_000).toISOString() }
      const query = new URLSearchParams(range)
      const counted = await call(
        'GET',
        `/admin/v1/enterprises/${enterpriseId}/deliveries/replayable?${query}`,
      )
      assert.equal(counted.status, 200, JSON.stringify(counted.body))
      assert.deepEqual(counted.body, { enterpriseId, ...range, replayable: 5 })

      expectCode(await call('GET', `/admin/v1/enterprises/999/deliveries/replayable?${query}`), 4040)
      const missing = await call(
        'GET',
        `/admin/v1/enterprises/${enterpriseId}/deliveries/replayable?from=${range.from}`,
      )
      expectCode(missing, 4001)
      assert.match(missing.body.msg as string, /^to: is required/)

      failing = false
      const replayed = await call('POST', `/admin/v1/enterprises/${enterpriseId}/deliveries/replay`, range)
      assert.deepEqual(replayed.body, { enterpriseId, replayed: 5 })
      await eventually(
        async () => (await log(`enterpriseId=${enterpriseId}&state=acked`)).deliveries.length === 5,
        30_000,
        'five acked deliveries',
      )
      const after = await call('GET', `/admin/v1/enterprises/${enterpriseId}/deliveries/replayable?${query}`)
      assert.equal(after.body.replayable, 0)
      // The URL's health is recorded after the attempts, which do not wait for it.
      let overview = (await call('GET', '/admin/v1/overview')).body as unknown as Overview
      await eventually(
        async () => {
          overview = (await call('GET', '/admin/v1/overview')).body as unknown as Overview
          return overview.endpoints[0]?.state === 'healthy'
        },
        30_000,
        'the push URL healthy again',
      )
      assert.equal(overview.push.attempts, 15)
      assert.equal(overview.push.acked, 5)
      assert.equal(overview.push.successRate, 5 / 15)
      assert.equal(overview.endpoints[0]?.state, 'healthy')
      assert.ok(overview.endpoints[0]?.lastSuccessAt)
    })

    test('the API routes need the admin token; the pages do not', async () => {
      expectCode(await call('GET', '/admin/v1/overview', undefined, 'wrong'), 4010)
      expectCode(await call('GET', '/admin/v1/delivery-log', undefined, 'wrong'), 4010)
      for (const path of ['/console', '/console/', '/console/index.html']) {
        const page = await fetch(`${platform.adminUrl}${path}`)
        assert.equal(page.status, 200, path)
        assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8')
        assert.match(await page.text(), /<script type="module" src="\/console\/console.js"><\/script>/)
      }
    })

    test('the assets are served with their types, a strict policy and revalidation, and nothing else', async () => {
      const types = {
        'console.js': 'text/javascript; charset=utf-8',
        'console.css': 'text/css; charset=utf-8',
      }
      for (const [name, type] of Object.entries(types)) {
        const response = await fetch(`${platform.adminUrl}/console/${name}`)
        assert.equal(response.status, 200)
        assert.equal(response.headers.get('content-type'), type)
        assert.equal(response.headers.get('cache-control'), 'no-cache')
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
        const policy = response.headers.get('content-security-policy') ?? ''
        assert.match(policy, /default-src 'none'; script-src 'self'/)
        // Stored audio plays from the partner listener, another origin: media only, no other directive.
        assert.match(policy, /; media-src 'self' http: https:;/)
        assert.doesNotMatch(policy.replace(/media-src [^;]*/, ''), /http:|https:/)
        const etag = response.headers.get('etag') as string
        assert.ok((await response.text()).length > 100)
        const again = await fetch(`${platform.adminUrl}/console/${name}`, {
          headers: { 'if-none-match': etag },
        })
        assert.equal(again.status, 304)
      }
      for (const path of [
        '/console/../package.json',
        '/console/%2e%2e/package.json',
        '/console/..%2fpackage.json',
        '/console/console-routes.js',
        '/console/nope.js',
      ]) {
        const response = await rawGet(platform.adminUrl, path)
        assert.equal(response.status, 404, path)
        assert.equal((JSON.parse(response.body) as { code: number }).code, 4040, path)
      }
    })

    test('every module the console imports is served, from the shell down', async () => {
      const seen = new Set<string>()
      const pending = ['console.js']
      for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
        if (seen.has(name)) continue
        seen.add(name)
        const response = await fetch(`${platform.adminUrl}/console/${name}`)
        assert.equal(response.status, 200, name)
        assert.equal(response.headers.get('content-type'), 'text/javascript; charset=utf-8', name)
        for (const [, imported] of (await response.text()).matchAll(/from '\.\/([\w-]+\.js)'/g)) {
          pending.push(imported as string)
        }
      }
      assert.ok(seen.has('deliveries.js') && seen.has('dom.js'), [...seen].join(', '))
    })
  })
}
