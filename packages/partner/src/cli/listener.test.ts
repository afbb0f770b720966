import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { latch } from '@earshot/test-kit/eventually'
import { type ReceiverParts, startListener } from './listener.js'

/**
 * listen binds its port before its receiver (and the database behind it) is open: `listening on` comes
 * at once, and a push arriving meanwhile is answered only once the receiver has handled it.
 */

const options = { host: '127.0.0.1', port: 0, path: '/earshot/push' }
const push = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })

/** A receiver that opens when the test says, noting the order of what happens. */
function gatedReceiver(events: string[]) {
  const gate = latch()
  const open = async (): Promise<ReceiverParts> => {
    await gate.done
    events.push('receiver open')
    return {
      handler(_request, response) {
        events.push('push handled')
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"code": 2000}')
      },
      async close() {
        events.push('receiver closed')
      },
    }
  }
  return { gate, open }
}

describe('listen: the port first, the receiver behind it', { timeout: 30_000 }, () => {
  test('listens before the receiver is open; a push waits for it, then is handled', async () => {
    const events: string[] = []
    const { gate, open } = gatedReceiver(events)
    const listener = await startListener(options, open)
    events.push('listening')
    const answer = push(listener.url)
    // The port serves while the receiver is still closed.
    const reached = await fetch(listener.url.replace('/earshot/push', '/elsewhere'))
    assert.equal(reached.status, 404)
    gate.signal()
    const response = await answer
    assert.deepEqual(await response.json(), { code: 2000 })
    await listener.stop()
    assert.deepEqual(events, ['listening', 'receiver open', 'push handled', 'receiver closed'])
  })

  test('a receiver that cannot open: waiting pushes are answered 5030 and `failed` rejects', async () => {
    const gate = latch()
    const listener = await startListener(options, async () => {
      await gate.done
      throw new Error('the data directory is in use')
    })
    const answer = push(listener.url)
    gate.signal()
    await assert.rejects(listener.failed, /in use/)
    const response = await answer
    assert.equal(response.status, 503)
    assert.equal(((await response.json()) as { code: number }).code, 5030)
    await listener.stop()
  })

  test('a refusal known at once (a locked data directory) comes before listening', async () => {
    await assert.rejects(
      startListener(options, () => Promise.reject(new Error('locked'))),
      /locked/,
    )
  })

  test('a port in use is refused, and the receiver opened meanwhile is closed', async () => {
    const events: string[] = []
    const first = await startListener(options, async () => ({ handler: () => {}, close: async () => {} }))
    const port = Number(new URL(first.url).port)
    const { gate, open } = gatedReceiver(events)
    gate.signal()
    await assert.rejects(startListener({ ...options, port }, open), { code: 'EADDRINUSE' })
    assert.deepEqual(events, ['receiver open', 'receiver closed'])
    await first.stop()
  })
})
