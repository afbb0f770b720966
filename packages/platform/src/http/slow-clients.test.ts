import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { RawConnection } from '@earshot/test-kit/raw-connection'

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
        keepAliveTimeoutSeconds: 0.5,
        pushDispatch: false,
      })
    })
    after(async () => {
      await platform?.stop()
    })

    test('a body that stops half-way: the connection is closed after the request timeout (408)', async () => {
      const connection = await RawConnection.open(platform.partnerUrl)
      connection.send(partialBody(TOKEN))
      await connection.closed
      assert.match(connection.received, /^HTTP\/1\.1 408 /)
    })

    test('headers that never end: the connection is closed after the request timeout', async () => {
      const connection = await RawConnection.open(platform.partnerUrl)
      connection.send(`POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Type: appl`)
      await connection.closed
      assert.match(connection.received, /^HTTP\/1\.1 408 /)
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
      assert.match(connection.received, /^HTTP\/1\.1 408 /)
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

  describe(`each listener holds at most EARSHOT_MAX_CONNECTIONS (${backend})`, { timeout: 60_000 }, () => {
    const cap = 3
    let platform: TestPlatform

    before(async () => {
      platform = await startTestPlatform(backend, { maxConnections: cap, pushDispatch: false })
    })
    after(async () => {
      await platform?.stop()
    })

    for (const listener of ['partner', 'admin'] as const) {
      test(`${listener}: connection ${cap + 1} is closed unanswered; a freed slot is usable again`, async () => {
        const url = listener === 'partner' ? platform.partnerUrl : platform.adminUrl
        const held: RawConnection[] = []
        for (let i = 0; i < cap; i++) {
          const connection = await RawConnection.open(url)
          connection.send(healthCheck)
          await connection.receive('"status":"ok"')
          held.push(connection)
        }

        const extra = await RawConnection.open(url)
        extra.send(healthCheck)
        await extra.closed
        assert.equal(extra.received, '')
        for (const connection of held) assert.equal(connection.socket.destroyed, false)

        // The server counts a connection as gone once it sees it closed: retry until a slot is free.
        await (held.shift() as RawConnection).close()
        for (;;) {
          const next = await RawConnection.open(url)
          next.send(healthCheck)
          const served = await next.receive('"status":"ok"').then(
            () => true,
            () => false,
          )
          if (served) {
            held.push(next)
            break
          }
        }
        await Promise.all(held.map((connection) => connection.close()))
      })
    }
  })
}
