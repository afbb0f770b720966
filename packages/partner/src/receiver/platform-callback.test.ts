import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { EarshotClient } from '../client/earshot-client.js'
import { type ReceiverLogger, silentLogger } from '../logging/receiver-logger.js'
import { type CallbackOutbox, openCallbackOutbox } from '../outbox/callback-outbox.js'
import { createPushReceiver, type ReceivedPush } from './push-receiver.js'

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
const close = async (server: Server | undefined) => {
  server?.closeAllConnections()
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
}

describe('receipt callback against a real platform that is down for a while', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let gateway: Server | undefined
  let receiverServer: Server | undefined
  let outbox: CallbackOutbox | undefined

  before(async () => {
    platform = await startTestPlatform('pglite', { pushAllowPrivate: true })
  })
  after(async () => {
    await close(receiverServer)
    await outbox?.close()
    await close(gateway)
    await platform?.stop()
  })

  test('the callback is retried through 5030s and finally confirmed by the platform', async (t) => {
    const partner = await createPartner(platform, 'Retry Co')
    // In front of the platform's partner API: the first three callbacks get 5030, as while it restarts.
    const UNAVAILABLE_FOR = 3
    const callbackRequests: number[] = []
    /** What happened, in order: callbacks arriving at the gateway and what the outbox logged. */
    const order: string[] = []
    /** The delay the outbox chose after each failed attempt (its log's retryInMs). */
    const retryIn: number[] = []
    gateway = createServer(async (request, response) => {
      const chunks: Buffer[] = []
      for await (const chunk of request) chunks.push(chunk as Buffer)
      if (request.url === '/openapi/v1/callback') {
        callbackRequests.push(performance.now())
        order.push('callback')
        if (callbackRequests.length <= UNAVAILABLE_FOR) {
          response.writeHead(503, { 'content-type': 'application/json' })
          response.end(JSON.stringify({ code: 5030, msg: 'restarting', requestId: 'gw' }))
          return
        }
      }
      const forwarded = await fetch(`${platform.partnerUrl}${request.url}`, {
        method: 'POST',
        headers: {
          'content-type': request.headers['content-type'] ?? '',
          ...(request.headers.authorization && { authorization: request.headers.authorization }),
        },
        body: Buffer.concat(chunks),
      })
      response.writeHead(forwarded.status, { 'content-type': 'application/json' })
      response.end(await forwarded.text())
    })
    const gatewayUrl = await listen(gateway)

    // The client does not retry on its own here: every retry is the outbox's, on its schedule.
    const client = new EarshotClient({ ...partner, baseUrl: gatewayUrl, retries: 0 })
    const logger: ReceiverLogger = {
      ...silentLogger,
      warn(details, message) {
        if (message !== 'receipt callback failed; will retry') return
        order.push('retry scheduled')
        retryIn.push((details as { retryInMs: number }).retryInMs)
      },
      info(_details, message) {
        if (message === 'receipt confirmed') order.push('confirmed')
      },
    }
    outbox = await openCallbackOutbox({
      confirm: (audioId, options) => client.confirmReceipt(audioId, options),
      retrySchedule: [100, 200],
      log: logger,
    })
    const stored: ReceivedPush[] = []
    const receiver = createPushReceiver({
      secret: partner.secret,
      keyVersion: partner.keyVersion,
      outbox,
      log: silentLogger,
      onRecording: async (push) => void stored.push(push),
    })
    receiverServer = createServer(receiver.handler)
    const pushUrl = `${await listen(receiverServer)}/earshot/push`
    await adminCall(platform, 'setPushUrl', {
      params: { enterpriseId: partner.enterpriseId },
      body: { pushUrl },
    })

    const audioId = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'DEV-RETRY',
      title: 'retried',
      recordedAt: '2026-03-01T10:00:00+08:00',
      denoiseUrl: 'https://media.example/retry.mp3',
      recordDuration: 1000,
    })
    const outboxOf = outbox
    await eventually(
      async () => {
        const [row] = await platform.context.db.query<{ state: string }>(
          'SELECT state FROM deliveries WHERE audio_id = $1',
          [audioId],
        )
        return row?.state === 'confirmed'
      },
      30_000,
      'the delivery confirmed by the callback',
    )
    assert.equal(stored.length, 1)
    assert.equal(callbackRequests.length, UNAVAILABLE_FOR + 1)
    // The outbox records the outcome just after the platform took the callback.
    const callback = await eventually(
      async () => {
        const [row] = await outboxOf.callbacks({ audioId })
        return row?.state !== 'pending' && row
      },
      30_000,
      'the outbox to record the confirmation',
    )
    assert.equal(callback.state, 'confirmed')
    assert.equal(callback.attempts, UNAVAILABLE_FOR + 1)
    // Each retry went out only after the failure before it was recorded with its delay: 100 ms after the
    // first failure, then 200 ms (the last delay repeats), each ±10%.
    assert.deepEqual(order, [
      ...Array.from({ length: UNAVAILABLE_FOR }, () => ['callback', 'retry scheduled']).flat(),
      'callback',
      'confirmed',
    ])
    const [first, ...later] = retryIn
    assert.ok(first !== undefined && first >= 90 && first <= 110, `retryInMs ${retryIn}`)
    assert.equal(later.length, UNAVAILABLE_FOR - 1)
    assert.ok(
      later.every((ms) => ms >= 180 && ms <= 220),
      `retryInMs ${retryIn}`,
    )
    // Measured, not asserted: how far apart the callbacks arrived.
    const gaps = callbackRequests.slice(1).map((at, i) => Math.round(at - (callbackRequests[i] as number)))
    t.diagnostic(`callback gaps ${gaps.join(', ')} ms for delays ${retryIn.map(Math.round).join(', ')} ms`)
    const [receipt] = await platform.context.db.query('SELECT 1 FROM receipts WHERE audio_id = $1', [audioId])
    assert.ok(receipt, 'the platform holds the receipt')
  })
})
