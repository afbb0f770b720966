import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner, expectCode, postJson, type Reply, type TestPartner } from '@earshot/test-kit/calls'
import { LogCapture, LogLevel, type LogLine } from '@earshot/test-kit/log-capture'
import { RawConnection } from '@earshot/test-kit/raw-connection'

/**
 * Issue 10, rows 7 and 9: what the request log says about a hostile or careless client. A client
 * gone mid-body is one info line without a stack (it was an error with a stack trace); a query string
 * is never written out (an admin token sent in one was), and no line holds a secret.
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
      connection.send(
        `POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"specVersion":`,
      )
      const port = connection.socket.localPort
      const incoming = await logs.waitFor(
        (line) => line.msg === 'incoming request' && reqOf(line)?.remotePort === port,
      )
      await connection.close()
      const aborted = await logs.waitFor(
        (line) => line.reqId === incoming.reqId && line.msg !== 'incoming request',
      )
      assert.equal(aborted.msg, 'client aborted the request before its body was complete')
      assert.equal(aborted.level, LogLevel.info)
      assert.equal(aborted.err, undefined)

      // Anything more this request logged would have been written by the time a later one completes.
      await linesOf(await postJson(platform, TOKEN, {}))
      const ofRequest = logs.lines.filter((line) => line.reqId === incoming.reqId)
      assert.deepEqual(
        ofRequest.map((line) => line.msg),
        ['incoming request', 'client aborted the request before its body was complete'],
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
      await logs.waitFor((line) => line.reqId === requestId && line.msg === 'request completed')
      const incoming = logs.lines.find((line) => line.reqId === requestId && line.msg === 'incoming request')
      assert.equal(reqOf(incoming as LogLine)?.url, '/admin/v1/deliveries?[redacted]')
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
      for (const reply of calls) assert.ok((await linesOf(reply)).length >= 2)

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
