import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminRefusal } from '@earshot/test-kit/calls'
import { latch } from '@earshot/test-kit/eventually'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { startTestReceiver } from '@earshot/test-kit/test-receiver'
import { DEFAULT_PUSH_PORTS } from '../config/config.js'

/**
 * Issue 42, finding 3: receiver checks had no concurrency limit, went on pushing (and polling) after
 * their caller left, accepted any port, and ran for a disabled enterprise, to which endpoints could also
 * be added.
 */

const CHECK = (enterpriseId: number) => `/admin/v1/enterprises/${enterpriseId}/endpoints/check`

/** A push target whose every request hangs; each is reported as it arrives and as it closes. */
interface HangingTarget {
  url: string
  arrivals: IncomingMessage[]
  /** Resolves with the next request to arrive. */
  next(): Promise<IncomingMessage>
  close(): Promise<void>
}

async function hangingTarget(): Promise<HangingTarget> {
  const arrivals: IncomingMessage[] = []
  const held = new Set<ServerResponse>()
  const server: Server = createServer((request, response) => {
    held.add(response)
    response.once('close', () => held.delete(response))
    arrivals.push(request)
    server.emit('arrival', request)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/push`,
    arrivals,
    next: async () => (await once(server, 'arrival'))[0] as IncomingMessage,
    close: async () => {
      for (const response of held) response.socket?.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}

/** Resolves when the push's connection closes (the check aborted it: the request errs too). */
function closed(request: IncomingMessage): Promise<void> {
  request.on('error', () => {})
  return new Promise((resolve) => request.once('close', () => resolve()))
}

interface Started {
  /** Aborts the caller's request: it goes away. */
  leave(): void
  answered: Promise<Response>
}

function startCheck(platform: TestPlatform, enterpriseId: number, url: string): Started {
  const caller = new AbortController()
  const answered = fetch(`${platform.adminUrl}${CHECK(enterpriseId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, callbackWithinSeconds: 60 }),
    signal: caller.signal,
  })
  answered.catch(() => {})
  return { leave: () => caller.abort(), answered }
}

async function expectRefused(started: Started, code: number, msg: RegExp): Promise<Response> {
  const response = await started.answered
  const answer = (await response.json()) as Record<string, unknown>
  assert.equal(answer.code, code, JSON.stringify(answer))
  assert.deepEqual(Object.keys(answer), ['code', 'msg', 'requestId'])
  assert.match(answer.msg as string, msg)
  return response
}

for (const backend of testBackends) {
  describe(`receiver check limits (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let target: HangingTarget
    const enterprises: number[] = []

    before(async () => {
      platform = await startTestPlatform(backend, {
        pushPorts: DEFAULT_PUSH_PORTS,
        receiverChecks: 2,
        receiverChecksPerEnterprise: 1,
        // Longer than the test: a push still hanging when its caller left is one the check did not abort.
        pushTimeoutSeconds: 120,
        pushDispatch: false,
      })
      for (const name of ['One', 'Two', 'Three', 'Four']) {
        enterprises.push((await adminClientOf(platform).createEnterprise(name)).enterpriseId)
      }
      target = await hangingTarget()
    })
    after(async () => {
      await target?.close()
      await platform?.stop()
    })

    test('a check whose caller goes away aborts its push; past the caps a check is refused 4290', {
      timeout: 20_000,
    }, async () => {
      const [one, two, three] = enterprises as [number, number, number]
      const first = startCheck(platform, one, target.url)
      const firstPush = await target.next()
      const again = await expectRefused(
        startCheck(platform, one, target.url),
        4290,
        /EARSHOT_RECEIVER_CHECKS_PER_ENTERPRISE/,
      )
      assert.match(again.headers.get('retry-after') ?? '', /^\d+$/)
      const second = startCheck(platform, two, target.url)
      const secondPush = await target.next()
      const third = await expectRefused(
        startCheck(platform, three, target.url),
        4290,
        /EARSHOT_RECEIVER_CHECKS\b/,
      )
      assert.match(third.headers.get('retry-after') ?? '', /^\d+$/)

      first.leave()
      second.leave()
      await Promise.all([closed(firstPush), closed(secondPush)])
    })

    test('a check whose caller goes away while it waits for callbacks stops, freeing its slot', {
      timeout: 20_000,
    }, async () => {
      const { enterpriseId, secret } = await adminClientOf(platform).createEnterprise('Polled')
      let pushed = latch()
      let lastPush = latch()
      const receiver = await startTestReceiver(secret, {
        answer: (push) => {
          pushed.signal()
          if (push.event.eventType === PushEventType.DELETED) lastPush.signal()
          return { status: 200, body: { code: 2000 } }
        },
      })
      try {
        const waiting = startCheck(platform, enterpriseId, receiver.url)
        await lastPush.done
        waiting.leave()
        // Accepted once the check that was left has ended: its pushes reach the receiver.
        for (;;) {
          pushed = latch()
          lastPush = latch()
          const next = startCheck(platform, enterpriseId, receiver.url)
          const first = await Promise.race([pushed.done.then(() => undefined), next.answered])
          if (first === undefined) {
            next.leave()
            break
          }
          await expectRefused({ ...next, answered: Promise.resolve(first) }, 4290, /PER_ENTERPRISE/)
        }
      } finally {
        await receiver.close()
      }
    })

    test('ports other than 80, 443 and 1024-65535 are refused (4001), naming EARSHOT_PUSH_PORTS', async () => {
      const [, , , four] = enterprises as [number, number, number, number]
      for (const url of ['http://127.0.0.1:25/push', 'http://127.0.0.1:0/push', 'https://127.0.0.1:1023/']) {
        await expectRefused(startCheck(platform, four, url), 4001, /EARSHOT_PUSH_PORTS/)
        const added = await adminRefusal(platform, 'addEndpoint', {
          params: { enterpriseId: four },
          body: { url },
        })
        assert.equal(added.status, 400, added.message)
        assert.match(added.msg, /EARSHOT_PUSH_PORTS/)
      }
    })

    test('a disabled enterprise is refused a check and a new endpoint (4030)', async () => {
      const client = adminClientOf(platform)
      const { enterpriseId } = await client.createEnterprise('Disabled')
      await client.disableEnterprise(enterpriseId)
      await expectRefused(startCheck(platform, enterpriseId, target.url), 4030, /disabled/)
      const added = await adminRefusal(platform, 'addEndpoint', {
        params: { enterpriseId },
        body: { url: target.url },
      })
      assert.equal(added.status, 403, added.message)
      assert.equal(added.code, 4030)
      assert.match(added.msg, /disabled/)
    })
  })
}
