import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { RawConnection } from '@earshot/test-kit/raw-connection'
import { createEnterprise } from '../enterprises/enterprise-store.js'

/**
 * Issue 10, row 2: a client that sends headers, part of a body and then nothing held its connection
 * for ever. Requests must arrive within EARSHOT_REQUEST_TIMEOUT (the admin listener's within
 * EARSHOT_ADMIN_REQUEST_TIMEOUT, for slow imports), idle keep-alive connections close after
 * EARSHOT_KEEP_ALIVE_TIMEOUT, and each listener holds at most EARSHOT_MAX_CONNECTIONS.
 */

const TOKEN = '/openapi/v1/token'
const IMPORT = (enterpriseId: number) => `/admin/v1/enterprises/${enterpriseId}/recordings/import`

/** Headers announcing 1000 bytes of body, then 7 of them. */
function partialBody(path: string, headers = ''): string {
  return `POST ${path} HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\n${headers}Content-Length: 1000\r\n\r\n{"abc":`
}

const healthCheck = 'GET /healthz HTTP/1.1\r\nHost: earshot\r\n\r\n'

/** A 408 with Earshot's body (4080), never Fastify's or Node's own. */
function expectTimeoutAnswer(received: string): void {
  assert.match(received, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  const [head = '', body = ''] = received.split('\r\n\r\n')
  assert.match(head, /\r\nContent-Type: application\/json; charset=utf-8\r\n/)
  const answer = JSON.parse(body)
  assert.deepEqual(Object.keys(answer), ['code', 'msg', 'requestId'])
  assert.equal(answer.code, 4080)
  assert.match(answer.msg, /^the request did not arrive within the server's time limit: /)
  assert.ok(head.includes(`\r\nX-Request-Id: ${answer.requestId}\r\n`))
}

function recordingLine(title: string): string {
  return `${JSON.stringify({
    deviceUid: 'dev-slow',
    title,
    recordedAt: '2026-05-01T09:00:00Z',
    denoiseUrl: 'https://cdn.example/slow.mp3',
    recordDuration: 3,
  })}\n`
}

for (const backend of testBackends) {
  describe(`slow clients are cut off (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform

    before(async () => {
      platform = await startTestPlatform(backend, {
        requestTimeoutSeconds: 0.5,
        headersTimeoutSeconds: 0.5,
        keepAliveTimeoutSeconds: 0.5,
        pushDispatch: false,
      })
    })
    after(async () => {
      await platform?.stop()
    })

    test('a body that stops half-way: the connection is closed after the request timeout (4080)', async () => {
      const connection = await RawConnection.open(platform.partnerUrl)
      connection.send(partialBody(TOKEN))
      await connection.closed
      expectTimeoutAnswer(connection.received)
    })

    test('headers that never end: the connection is closed after the request timeout (4080)', async () => {
      const connection = await RawConnection.open(platform.partnerUrl)
      connection.send(`POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Type: appl`)
      await connection.closed
      expectTimeoutAnswer(connection.received)
    })

    test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
      const connection = await RawConnection.open(platform.partnerUrl)
      connection.send(healthCheck)
      await connection.receive('"status":"ok"')
      await connection.closed
    })

    test('admin listener: headers that never end are cut off like on the partner listener', async () => {
      const connection = await RawConnection.open(platform.adminUrl)
      connection.send('GET /admin/v1/enterprises HTTP/1.1\r\nHost: earshot\r\nAuthor')
      await connection.closed
      expectTimeoutAnswer(connection.received)
    })

    test('admin listener: a slow body without the admin token is answered 4010 and closed at once', async () => {
      // The admin request timeout is an hour here: only the refusal closes the connection.
      const connection = await RawConnection.open(platform.adminUrl)
      connection.send(partialBody(IMPORT(1)))
      await connection.closed
      assert.match(connection.received, /^HTTP\/1\.1 401 /)
      assert.match(connection.received, /"code":4010/)
    })

    test('admin listener: an import may take longer to upload than a partner request may', async () => {
      const partner = await createPartner(platform, 'Slow Upload Co')
      let partnerCutOff!: () => void
      const cutOff = new Promise<void>((resolve) => {
        partnerCutOff = resolve
      })
      async function* body() {
        yield new TextEncoder().encode(recordingLine('first half'))
        // Upload the rest only once a partner request started after this one was cut off.
        await cutOff
        yield new TextEncoder().encode(recordingLine('second half'))
      }
      const importing = fetch(`${platform.adminUrl}${IMPORT(partner.enterpriseId)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
        body: body(),
        duplex: 'half',
      } as RequestInit)

      const slow = await RawConnection.open(platform.partnerUrl)
      slow.send(partialBody(TOKEN))
      await slow.closed
      partnerCutOff()

      const response = await importing
      const text = await response.text()
      assert.equal(response.status, 200, text)
      assert.deepEqual(JSON.parse(text.trim().split('\n').at(-1) as string), { imported: 2, skipped: 0 })
    })

    test('requests that arrive in time are served as before', async () => {
      const partner = await createPartner(platform, 'Timely Co')
      assert.equal(typeof (await partner.token()), 'string')
    })
  })

  describe(`connection caps: in all and per client address (${backend})`, { timeout: 60_000 }, () => {
    const cap = 4

    /** A platform of its own: the listeners count connections until they see them closed. */
    async function withPlatform(use: (platform: TestPlatform) => Promise<void>): Promise<void> {
      const platform = await startTestPlatform(backend, {
        maxConnections: cap,
        maxConnectionsPerClient: 2,
        pushDispatch: false,
      })
      try {
        await use(platform)
      } finally {
        await platform.stop()
      }
    }

    /**
     * A connection whose request is under way (an import, on admin): its headers read by the server, which
     * says so with 100 Continue, and part of its body sent.
     */
    async function busy(platform: TestPlatform, url: string, from: string): Promise<RawConnection> {
      const connection = await RawConnection.open(url, from)
      const expect = 'Expect: 100-continue\r\n'
      if (url === platform.partnerUrl) connection.send(partialBody(TOKEN, expect))
      else {
        // Made in the database: an admin API call would take a connection of its own.
        const { enterpriseId } = await createEnterprise(platform.context.db, `Busy ${from}`, null)
        const token = `Authorization: Bearer ${platform.adminToken}\r\n`
        connection.send(partialBody(IMPORT(enterpriseId), `${token}${expect}`))
      }
      await connection.receive('HTTP/1.1 100 Continue')
      return connection
    }
    async function served(url: string, from: string): Promise<RawConnection> {
      const connection = await RawConnection.open(url, from)
      connection.send(healthCheck)
      await connection.receive('"status":"ok"')
      return connection
    }
    async function refused(url: string, from: string): Promise<string> {
      const connection = await RawConnection.open(url, from)
      connection.send(healthCheck)
      await connection.closed
      return connection.received
    }

    for (const listener of ['partner', 'admin'] as const) {
      const urlOf = (platform: TestPlatform) =>
        listener === 'partner' ? platform.partnerUrl : platform.adminUrl

      test(`${listener}: a client over its cap is answered 503 (5030), another client is served`, () =>
        withPlatform(async (platform) => {
          const url = urlOf(platform)
          await busy(platform, url, '127.0.0.2')
          await busy(platform, url, '127.0.0.2')
          const answer = await refused(url, '127.0.0.2')
          assert.match(answer, /^HTTP\/1\.1 503 /)
          assert.match(answer, /"code":5030/)
          assert.match(answer, /EARSHOT_MAX_CONNECTIONS_PER_CLIENT/)
          assert.match(answer, /\r\nretry-after: 1\r\n/i)
          await served(url, '127.0.0.3')
        }))

      test(`${listener}: at the total cap of busy connections, a new one is answered 503 (5030)`, () =>
        withPlatform(async (platform) => {
          const url = urlOf(platform)
          for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'])
            await busy(platform, url, from)
          const answer = await refused(url, '127.0.0.8')
          assert.match(answer, /^HTTP\/1\.1 503 /)
          assert.match(answer, /"code":5030/)
          assert.match(answer, /EARSHOT_MAX_CONNECTIONS\)/)
        }))

      test(`${listener}: near the total cap, the longest idle connections are closed to make room`, () =>
        withPlatform(async (platform) => {
          const url = urlOf(platform)
          const idle: RawConnection[] = []
          for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'])
            idle.push(await served(url, from))
          await served(url, '127.0.0.8')
          await Promise.all([idle[0]?.closed, idle[1]?.closed])
          assert.equal(idle[3]?.socket.destroyed, false, 'the most recently active stays')
        }))
    }
  })
}
