import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { RawConnection } from '@earshot/test-kit/raw-connection'

/**
 * No client can hold the door shut: one client address (127.0.0.2) opens 2,000 keep-alive connections,
 * each served once then held idle, and 600 slow ones (300 trickling their headers, 300 their body), while
 * another client (127.0.0.1) asks for /healthz and tokens. Every one of the other client's requests
 * succeeds, and the flooding client holds no more than its cap. The default caps and timeouts apply.
 */

const IDLE = 2000
const SLOW = 300
const HOSTILE = '127.0.0.2'
const healthCheck = 'GET /healthz HTTP/1.1\r\nHost: earshot\r\n\r\n'

describe('a client flooding the partner listener shuts nobody out', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner
  const flood: RawConnection[] = []
  let trickling = true

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false, rateLimitPerMinute: 0 })
    partner = await createPartner(platform, 'Neighbour')
  })
  after(async () => {
    trickling = false
    await Promise.all(flood.map((connection) => connection.close()))
    await platform?.stop()
  })

  /** Opens `count` connections from the hostile address, `per` at a time, each started by `start`. */
  async function open(count: number, start: (connection: RawConnection) => void): Promise<RawConnection[]> {
    const opened: RawConnection[] = []
    for (let i = 0; i < count; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(100, count - i) }, () =>
          RawConnection.open(platform.partnerUrl, HOSTILE).then(
            (connection) => connection,
            () => undefined,
          ),
        ),
      )
      for (const connection of batch) {
        if (!connection) continue
        start(connection)
        opened.push(connection)
      }
    }
    flood.push(...opened)
    return opened
  }

  /** Sends `text` a character at a time, one a second, until the test ends or the server closes it. */
  async function trickle(connection: RawConnection, text: string): Promise<void> {
    for (const character of text) {
      if (!trickling || connection.socket.destroyed) return
      connection.send(character)
      await sleep(1000)
    }
  }

  test('2,000 idle and 600 slow connections from one client; another client is served throughout', async () => {
    const idle = await open(IDLE, (connection) => connection.send(healthCheck))
    // Each one answered (200, or 503 when over the cap), or closed at once.
    await Promise.all(idle.map((c) => Promise.race([c.closed, c.receive('}')]).catch(() => {})))
    await open(SLOW, (connection) => {
      connection.send('GET /healthz HTTP/1.1\r\nHost: earshot\r\n')
      void trickle(connection, 'X-Slow: header that never ends')
    })
    await open(SLOW, (connection) => {
      connection.send(
        'POST /openapi/v1/token HTTP/1.1\r\nHost: earshot\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
      )
      void trickle(connection, '{"a body that never ends":')
    })

    // The other client, while the flood is held.
    const health = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${platform.partnerUrl}/healthz`).then((response) => response.status),
      ),
    )
    assert.deepEqual(
      health,
      Array.from({ length: 20 }, () => 200),
    )
    for (let i = 0; i < 10; i++) assert.equal(typeof (await partner.token()), 'string')

    // The flooding client holds at most its cap of served connections; the rest were answered 503 or closed.
    const servedIdle = idle.filter((c) => !c.socket.destroyed && c.received.includes('"status":"ok"'))
    assert.ok(servedIdle.length <= 128, `${servedIdle.length} idle connections held`)
    const refused = idle.filter((c) => /^HTTP\/1\.1 503 /.test(c.received))
    assert.ok(refused.length > 0, 'some were answered 503')
    assert.ok(refused.every((c) => c.received.includes('"code":5030')))
  })
})
