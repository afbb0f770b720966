import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { LogCapture, LogLevel, type LogLine } from '@earshot/test-kit/log-capture'

/**
 * Issue 42, finding 4: a path parameter over the router's limit (1,024 characters) answered 5000 and
 * logged the whole path at error, without authentication. It is a refusal in the catalogue's shape
 * now, 4140 (or 4001), logged at info with the length, never the value.
 */

describe('path parameters over the limit', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  const logs = new LogCapture()

  before(async () => {
    platform = await startTestPlatform('pglite', { logLevel: 'trace' }, { logDestination: logs.destination })
  })
  after(async () => {
    await platform?.stop()
  })

  async function refusedLine(response: Response, marker: string) {
    assert.equal(response.status, 414)
    const body = (await response.json()) as { code: number; msg: string; requestId: string }
    assert.deepEqual(Object.keys(body).sort(), ['code', 'msg', 'requestId'])
    assert.equal(body.code, 4140)
    assert.match(body.msg, /1024/)
    assert.ok(!body.msg.includes(marker))
    const line = await logs.waitFor(
      (each: LogLine) => each.reqId === body.requestId && each.msg === 'request completed',
    )
    assert.equal(line.level, LogLevel.info)
    assert.equal(line.code, 4140)
    return line
  }

  test('a media link of 1,100 characters is 4140, logged at info with its length only', async () => {
    const marker = 'M'.repeat(1100)
    const line = await refusedLine(await fetch(`${platform.partnerUrl}/media/v1/${marker}`), marker)
    assert.equal((line.req as { url: string }).url, '/media/v1/[1100 characters]')
    const head = await fetch(`${platform.partnerUrl}/media/v1/${marker}`, { method: 'HEAD' })
    assert.equal(head.status, 414)
    assert.ok(logs.text.every((text) => !text.includes(marker)))
    assert.ok(logs.lines.every((each) => each.level < LogLevel.warn))
  })

  test('an admin audioId of 2,000 characters is 4140, before and without authentication', async () => {
    const marker = 'A'.repeat(2000)
    const path = `/admin/v1/enterprises/1/recordings/${marker}/audio`
    for (const authorization of [`Bearer ${platform.adminToken}`, 'Bearer wrong']) {
      const response = await fetch(`${platform.adminUrl}${path}`, {
        method: 'PUT',
        headers: { authorization, 'content-type': 'audio/wav' },
        body: 'x',
      })
      await refusedLine(response, marker)
    }
    const remove = await fetch(`${platform.adminUrl}/admin/v1/enterprises/1/recordings/${marker}`, {
      method: 'DELETE',
    })
    await refusedLine(remove, marker)
    assert.ok(logs.text.every((text) => !text.includes(marker)))
    assert.ok(logs.lines.every((each) => each.level < LogLevel.warn))
  })
})
