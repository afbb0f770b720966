import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { type ChildPlatform, startChildPlatform } from '@earshot/test-kit/child-platform'
import { LogCapture, LogLevel } from '@earshot/test-kit/log-capture'
import { RawConnection } from '@earshot/test-kit/raw-connection'

/**
 * Every answer the server can still write has Earshot's body {code, msg, requestId}, those it writes
 * before or without a route too: a request that does not arrive within EARSHOT_REQUEST_TIMEOUT is
 * answered 4080 (it was Fastify's own 408 body), an unsupported Expect and a CONNECT 4000 (Node's empty
 * 417, and a connection closed without a word).
 */

const TOKEN = '/openapi/v1/token'

/** Headers announcing 1000 bytes of body, then 7 of them, then nothing. */
const stalledBody = `POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"abc":`

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: { code: number; msg: string; requestId: string }
}

/** The one HTTP answer received on a raw connection, its body parsed. */
function parseAnswer(received: string): RawAnswer {
  const [head = '', ...rest] = received.split('\r\n\r\n')
  const [statusLine = '', ...headerLines] = head.split('\r\n')
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':')
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
    }),
  )
  return {
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]),
    headers,
    body: JSON.parse(rest.join('\r\n\r\n')),
  }
}

/** Earshot's body, the status code / 10, its requestId in X-Request-Id, and nothing of a framework. */
function expectEarshotAnswer(received: string, code: number, msg: string): RawAnswer {
  const answer = parseAnswer(received)
  assert.equal(answer.status, Math.floor(code / 10), received)
  assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(Object.keys(answer.body), ['code', 'msg', 'requestId'])
  assert.equal(answer.body.code, code)
  assert.equal(answer.body.msg, msg)
  assert.match(answer.body.requestId, /^[0-9a-f-]{36}$/)
  assert.equal(answer.headers['x-request-id'], answer.body.requestId)
  assert.doesNotMatch(received, /Client Timeout|"statusCode"|"error"/)
  return answer
}

describe('a platform started with EARSHOT_REQUEST_TIMEOUT=0.5', { timeout: 60_000 }, () => {
  let platform: ChildPlatform

  before(async () => {
    platform = await startChildPlatform({ EARSHOT_DATA_DIR: 'memory://', EARSHOT_REQUEST_TIMEOUT: '0.5' })
  })
  after(async () => {
    platform?.process.kill('SIGKILL')
    await platform?.exited
  })

  const TIMEOUT_MSG =
    "the request did not arrive within the server's time limit: the whole request, headers and body, " +
    'must arrive within 0.5 s; send it again without pausing part-way'

  test('headers and part of a body, then nothing: 408 with Earshot 4080 body, then the connection closes', async () => {
    const connection = await RawConnection.open(platform.partnerUrl)
    connection.send(stalledBody)
    await connection.closed
    expectEarshotAnswer(connection.received, 4080, TIMEOUT_MSG)
    assert.equal(parseAnswer(connection.received).headers.connection, 'close')
  })

  test('headers that never end: the same 4080', async () => {
    const connection = await RawConnection.open(platform.partnerUrl)
    connection.send(`GET /healthz HTTP/1.1\r\nHost: earshot\r\nAccept: appl`)
    await connection.closed
    expectEarshotAnswer(connection.received, 4080, TIMEOUT_MSG)
  })

  test('the admin listener has its own limit (EARSHOT_ADMIN_REQUEST_TIMEOUT) and says so', async () => {
    const admin = await startChildPlatform({
      EARSHOT_DATA_DIR: 'memory://',
      EARSHOT_ADMIN_REQUEST_TIMEOUT: '0.4',
      EARSHOT_HEADERS_TIMEOUT: '0.2',
    })
    try {
      const connection = await RawConnection.open(admin.adminUrl)
      connection.send('GET /healthz HTTP/1.1\r\nHost: earshot\r\nAcc')
      await connection.closed
      expectEarshotAnswer(
        connection.received,
        4080,
        "the request did not arrive within the server's time limit: its headers must arrive within 0.2 s " +
          'and the whole request, body included, within 0.4 s; send it again without pausing part-way',
      )
    } finally {
      admin.process.kill('SIGKILL')
      await admin.exited
    }
  })

  test('an Expect other than 100-continue: 4000 (Node would send an empty 417)', async () => {
    const connection = await RawConnection.open(platform.partnerUrl)
    connection.send(`GET /healthz HTTP/1.1\r\nHost: earshot\r\nExpect: 200-ok\r\n\r\n`)
    await connection.closed
    expectEarshotAnswer(
      connection.received,
      4000,
      'the only Expect the platform supports is 100-continue: send the request without this Expect header',
    )
  })

  test('CONNECT: 4000 (Node would close the connection without a word)', async () => {
    const connection = await RawConnection.open(platform.partnerUrl)
    connection.send('CONNECT earshot.example:443 HTTP/1.1\r\nHost: earshot.example:443\r\n\r\n')
    await connection.closed
    expectEarshotAnswer(connection.received, 4000, 'CONNECT is not supported: the platform is not a proxy')
  })
})

describe('a request cut off by its timeout is logged once', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  const logs = new LogCapture()

  before(async () => {
    platform = await startTestPlatform(
      'pglite',
      { logLevel: 'info', requestTimeoutSeconds: 0.5, headersTimeoutSeconds: 0.5, pushDispatch: false },
      { logDestination: logs.destination },
    )
  })
  after(async () => {
    await platform?.stop()
  })

  test('with its headers: one info line under the requestId of the 4080 answer', async () => {
    const connection = await RawConnection.open(platform.partnerUrl)
    connection.send(stalledBody)
    await connection.closed
    const { requestId } = parseAnswer(connection.received).body
    const line = await logs.waitFor((each) => each.reqId === requestId)
    assert.equal(line.msg, 'request timed out')
    assert.equal(line.level, LogLevel.info)
    assert.equal(line.code, 4080)
    assert.deepEqual(line.res, { statusCode: 408 })
    assert.equal((line.req as { url: string }).url, TOKEN)
    // The abort of its body that follows is not logged again.
    const later = await fetch(`${platform.partnerUrl}/openapi/v1/nowhere`)
    const laterId = ((await later.json()) as { requestId: string }).requestId
    await logs.waitFor((each) => each.reqId === laterId)
    assert.deepEqual(
      logs.lines.filter((each) => each.reqId === requestId).map((each) => each.msg),
      ['request timed out'],
    )
  })

  test('without complete headers: one info line under the requestId of the answer', async () => {
    const connection = await RawConnection.open(platform.partnerUrl)
    connection.send(`POST ${TOKEN} HTTP/1.1\r\nHost: earshot\r\nContent-Ty`)
    await connection.closed
    const { requestId } = parseAnswer(connection.received).body
    const line = await logs.waitFor((each) => each.reqId === requestId)
    assert.equal(line.msg, 'request timed out before its headers were complete')
    assert.equal(line.level, LogLevel.info)
    assert.equal(line.code, 4080)
  })
})
