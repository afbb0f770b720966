import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, expectCode, postJson, type Reply, type TestPartner } from '@earshot/test-kit/calls'
import { LogCapture, LogLevel, type LogLine } from '@earshot/test-kit/log-capture'
import { RawConnection } from '@earshot/test-kit/raw-connection'
import { requestLogLevel, SLOW_REQUEST_MS } from './create-server.js'

/**
 * Issue 10, rows 7 and 9: what the request log says about a hostile or careless client. A client
 * gone mid-body is one info line without a stack (it was an error with a stack trace); a query string
 * is never written out (an admin token sent in one was), and no line holds a secret. And the request
 * log itself: one line per request ("request completed"), at info only when it was refused or failed
 * (status 400 or more) or took over a second, at debug otherwise.
 */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'

const reqOf = (line: LogLine) => line.req as { url?: string; remotePort?: number } | undefined

for (const backend of testBackends) {
  describe(`request logs (${backend})`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    const logs = new LogCapture()

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { logLevel: 'trace', pushDispatch: false },
        { logDestination: logs.destination },
      )
      partner = await createPartner(platform)
    })
    after(async () => {
      await platform?.stop()
    })

    /** The lines of one request, once its completion is logged. */
    async function linesOf(reply: Reply): Promise<LogLine[]> {
      const requestId = reply.body.requestId
      await logs.waitFor((line) => line.reqId === requestId && line.msg === 'request completed')
      return logs.lines.filter((line) => line.reqId === requestId)
    }

    test('row 7: a client gone mid-body is one info line, without a stack', async () => {
      const connection = await RawConnection.open(platform.partnerUrl)
      // 100 Continue says the server has the headers and is reading the body.
      connection.send(
        `POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n{"specVersion":`,
      )
      const port = connection.socket.localPort
      await connection.receive('HTTP/1.1 100 Continue')
      await connection.close()
      const aborted = await logs.waitFor((line) => reqOf(line)?.remotePort === port)
      assert.equal(aborted.msg, 'client aborted the request before its body was complete')
      assert.equal(aborted.level, LogLevel.info)
      assert.equal(aborted.err, undefined)
      assert.equal(reqOf(aborted)?.url, TOKEN)

      // Anything more this request logged would have been written by the time a later one completes.
      await linesOf(await postJson(platform, TOKEN, {}))
      const ofRequest = logs.lines.filter((line) => line.reqId === aborted.reqId)
      assert.deepEqual(
        ofRequest.map((line) => line.msg),
        ['client aborted the request before its body was complete'],
      )
      // At trace, Fastify also logs the connection's parse error (a stack included): not below debug.
      const shown = logs.lines.filter((line) => line.level >= LogLevel.debug)
      assert.ok(shown.every((line) => line.err === undefined && !JSON.stringify(line).includes('"stack"')))
    })

    test('row 9: an admin token in a query string is refused and never logged', async () => {
      for (const query of [
        `token=${platform.adminToken}`,
        `access_token=${encodeURIComponent(platform.adminToken)}`,
      ]) {
        const response = await fetch(`${platform.adminUrl}/admin/v1/enterprises?${query}`)
        const reply = {
          status: response.status,
          headers: response.headers,
          body: await response.json(),
        } as Reply
        expectCode(reply, 4010)
        const lines = await linesOf(reply)
        assert.equal(reqOf(lines[0] as LogLine)?.url, '/admin/v1/enterprises?[redacted]')
      }
      assert.ok(logs.text.every((text) => !text.includes(platform.adminToken)))
    })

    test('row 9: a malformed request is logged (at trace) without its bytes, the admin token in them', async () => {
      const connection = await RawConnection.open(platform.adminUrl)
      connection.send(
        `GET /admin/v1/enterprises HTTP/1.1\r\nHost: earshot\r\nAuthorization: Bearer ${platform.adminToken}\r\nBad Header\r\n\r\n`,
      )
      await connection.closed
      const parseError = await logs.waitFor(
        (line) =>
          line.msg === 'client error' && (line.err as { code?: string }).code === 'HPE_INVALID_HEADER_TOKEN',
      )
      assert.equal((parseError.err as { rawPacket?: unknown }).rawPacket, '[redacted]')
      assert.ok(logs.text.every((text) => !text.includes(platform.adminToken)))
    })

    test('row 9: an admin call with a query string logs its path only', async () => {
      const response = await fetch(`${platform.adminUrl}/admin/v1/deliveries?state=failed`, {
        headers: { authorization: `Bearer ${platform.adminToken}` },
      })
      assert.equal(response.status, 200)
      const requestId = response.headers.get('x-request-id')
      await response.arrayBuffer()
      const completed = await logs.waitFor(
        (line) => line.reqId === requestId && line.msg === 'request completed',
      )
      assert.equal(reqOf(completed)?.url, '/admin/v1/deliveries?[redacted]')
      assert.ok(logs.text.every((text) => !text.includes('state=failed')))
    })

    test('row 9: partner calls log no secret, token, envelope or plaintext', async () => {
      const accessToken = await partner.token()
      const sealed = seal(partner.key, partner.keyVersion, 'log-check', { deviceUid: 'plaintext-marker' })
      const calls = [
        await postJson(platform, TOKEN, {
          ...seal(partner.key, partner.keyVersion, 'log-check-token', {}),
          enterpriseId: partner.enterpriseId,
        }),
        await postJson(platform, AUDIOS, sealed, accessToken),
        await partner.call(AUDIOS, { deviceUid: 'plaintext-marker' }, accessToken),
        // Refused: a bad token, a bad envelope.
        await postJson(platform, AUDIOS, sealed, `${accessToken}x`),
        await postJson(platform, AUDIOS, { ...sealed, tag: 'AAAA' }, accessToken),
      ]
      const healthz = await fetch(`${platform.partnerUrl}/healthz?access_token=${accessToken}`)
      assert.equal(healthz.status, 200)
      await healthz.arrayBuffer()
      const healthzId = healthz.headers.get('x-request-id')
      await logs.waitFor((line) => line.reqId === healthzId && line.msg === 'request completed')
      for (const reply of calls) assert.equal((await linesOf(reply)).length, 1, 'one line per request')

      for (const secret of [
        partner.secret,
        accessToken,
        platform.adminToken,
        sealed.ciphertext,
        sealed.nonce,
        'plaintext-marker',
        'Bearer',
      ]) {
        assert.ok(
          logs.text.every((text) => !text.includes(secret)),
          `a log line holds ${secret}`,
        )
      }
    })
  })
}

describe('the request log: one line per request, at info or warn only when it failed or was slow', {
  timeout: 60_000,
}, () => {
  let platform: TestPlatform
  const logs = new LogCapture()

  before(async () => {
    platform = await startTestPlatform(
      'pglite',
      { logLevel: 'info', pushDispatch: false },
      { logDestination: logs.destination },
    )
  })
  after(async () => {
    await platform?.stop()
  })

  /** The lines of a request, once a later refused request's line (always written at info) is in. */
  async function settledLinesOf(requestId: string | null | undefined): Promise<LogLine[]> {
    const marker = await postJson(platform, TOKEN, {})
    await logs.waitFor((line) => line.reqId === marker.body.requestId)
    return logs.lines.filter((line) => line.reqId === requestId)
  }

  test('the level: warn for 5xx, info for 4xx or over SLOW_REQUEST_MS, debug otherwise', () => {
    assert.equal(SLOW_REQUEST_MS, 1000)
    assert.equal(requestLogLevel(200, 3), 'debug')
    assert.equal(requestLogLevel(304, SLOW_REQUEST_MS), 'debug')
    assert.equal(requestLogLevel(200, SLOW_REQUEST_MS + 1), 'info')
    assert.equal(requestLogLevel(400, 1), 'info')
    assert.equal(requestLogLevel(404, 1), 'info')
    assert.equal(requestLogLevel(500, 1), 'warn')
    assert.equal(requestLogLevel(503, 1), 'warn')
  })

  test('a request answered well and fast writes nothing at info', async () => {
    const partner = await createPartner(platform, 'Quiet Co')
    const token = await partner.token()
    const listed = await partner.call(AUDIOS, {}, token)
    assert.equal(listed.body.code, 2000)
    const healthz = await fetch(`${platform.partnerUrl}/healthz`)
    await healthz.arrayBuffer()
    for (const requestId of [listed.body.requestId, healthz.headers.get('x-request-id')]) {
      // Unless the machine was so busy that it took over a second: then it is one line, for being slow.
      const lines = await settledLinesOf(requestId)
      assert.ok(
        lines.length === 0 || (lines.length === 1 && (lines[0]?.responseTime as number) > SLOW_REQUEST_MS),
        JSON.stringify(lines),
      )
    }
    assert.ok(logs.lines.every((line) => line.msg !== 'incoming request'))
  })

  test('a refused request is one info line: method, path, status, code and time, nothing of its body', async () => {
    const refused = await postJson(platform, TOKEN, { enterpriseId: 1, secret: 'body-marker' })
    expectCode(refused, 4000)
    const lines = await settledLinesOf(refused.body.requestId)
    assert.equal(lines.length, 1)
    const [line] = lines as [LogLine]
    assert.equal(line.level, LogLevel.info)
    assert.equal(line.msg, 'request completed')
    const req = line.req as Record<string, unknown>
    assert.deepEqual(Object.keys(req), ['method', 'url', 'host', 'remoteAddress', 'remotePort'])
    assert.deepEqual([req.method, req.url, req.remoteAddress], ['POST', TOKEN, '127.0.0.1'])
    assert.deepEqual(line.res, { statusCode: 400 })
    assert.equal(line.code, 4000)
    assert.equal(typeof line.responseTime, 'number')
    assert.ok(logs.text.every((text) => !text.includes('body-marker')))

    const unknown = await fetch(`${platform.partnerUrl}/openapi/v1/nowhere`)
    const body = (await unknown.json()) as { requestId: string }
    const [notFound, ...more] = await settledLinesOf(body.requestId)
    assert.deepEqual(more, [])
    assert.deepEqual(
      [notFound?.level, notFound?.code, notFound?.res],
      [LogLevel.info, 4040, { statusCode: 404 }],
    )
  })

  test('a 5xx is one warn line with its reason (here: over the per-client connection cap)', async () => {
    const capped = new LogCapture()
    const small = await startTestPlatform(
      'pglite',
      { logLevel: 'info', maxConnectionsPerClient: 1, pushDispatch: false },
      { logDestination: capped.destination },
    )
    try {
      const busy = await RawConnection.open(small.partnerUrl)
      busy.send(
        `POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n{`,
      )
      await busy.receive('HTTP/1.1 100 Continue')
      const refused = await RawConnection.open(small.partnerUrl)
      refused.send('GET /healthz HTTP/1.1\r\nHost: earshot\r\n\r\n')
      await refused.closed
      const requestId = /"requestId":"([^"]+)"/.exec(refused.received)?.[1]
      const line = await capped.waitFor((each) => each.reqId === requestId)
      assert.equal(line.level, LogLevel.warn)
      assert.equal(line.msg, 'request completed')
      assert.equal(line.code, 5030)
      assert.match(line.reason as string, /EARSHOT_MAX_CONNECTIONS_PER_CLIENT/)
      assert.deepEqual(line.res, { statusCode: 503 })
      await busy.close()
    } finally {
      await small.stop()
    }
  })
})
