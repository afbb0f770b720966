import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { EarshotClient } from './earshot-client.js'
import { EarshotApiError } from './errors.js'

/*
 * `call` reaches any sealed partner operation by its operationId, typed by its contract: a route that the
 * client has no method for yet is called this way. The `@ts-expect-error` lines compile only while tsc
 * refuses what follows them.
 */

let platform: TestPlatform
let partner: TestPartner
let client: EarshotClient

before(async () => {
  platform = await startTestPlatform('pglite')
  partner = await createPartner(platform, 'Call Co')
  await ingest(platform, partner.enterpriseId, {
    audioId: 'call-1',
    deviceUid: 'dev-1',
    title: 'Called',
    recordedAt: '2026-01-01T00:00:00Z',
    denoiseUrl: 'https://media.example/1.mp3',
    recordDuration: 60_000,
  })
  client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
})

after(async () => {
  await platform?.stop()
})

test('call answers what the method of the same operation answers, typed by its contract', {
  timeout: 60_000,
}, async () => {
  const called = await client.call('queryRecordings', { page: 1, size: 10 })
  const page = await client.queryAudios({ page: 1, size: 10 })
  assert.equal(called.total, 1)
  assert.equal(called.items[0]?.audioId, 'call-1')
  assert.deepEqual(
    called.items.map((item) => item.data.title),
    page.items.map((item) => item.data.title),
  )
  const changes = await client.call('readChanges', {})
  assert.equal(changes.items[0]?.audioId, 'call-1')
  assert.equal(await client.call('confirmReceipt', { audioId: 'call-1' }), undefined)
})

test('a plaintext off its contract is refused with 4001 naming the field, before anything is sent', {
  timeout: 60_000,
}, async () => {
  let sent = 0
  const counting = new EarshotClient({
    ...partner,
    baseUrl: platform.partnerUrl,
    fetch: (input, init) => {
      sent++
      return fetch(input, init)
    },
  })
  await assert.rejects(
    // @ts-expect-error: size is a number in the contract
    counting.call('queryRecordings', { size: 'ten' }),
    (error: unknown) => error instanceof EarshotApiError && error.code === 4001 && /size/.test(error.message),
  )
  assert.equal(sent, 0)
  // @ts-expect-error: no such sealed operation (the token's request is not sealed with a bearer token)
  await assert.rejects(counting.call('issueToken', {}))
})
