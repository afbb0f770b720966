import assert from 'node:assert/strict'
import { createDecipheriv } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { type Envelope, type EnvelopeKey, loadKey, open } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { EarshotClient } from '../client/earshot-client.js'
import { silentLogger } from '../logging/receiver-logger.js'
import { type CallbackOutbox, openCallbackOutbox } from '../outbox/callback-outbox.js'
import type { Database } from '../storage/database.js'
import { createPushReceiver } from './push-receiver.js'
import { databaseRecordingStore } from './recording-store.js'

/*
 * The platform's receiver check (earshot endpoints check) against the kit's own receiver, which follows the
 * protocol, and against careless receivers, each of which fails on exactly the item it breaks.
 */

const servers: Server[] = []

async function serve(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/earshot/push`
}

interface Flaws {
  /** Decrypts without checking the tag (never calls decipher.final()). */
  skipsTagCheck?: boolean
  /** When it calls back: after the answer (as it should), never, or before answering. */
  callback: 'after' | 'never' | 'before'
}

/** A hand-written receiver, right in everything but its flaws: it refuses seen nonces, acks deletions. */
function carelessReceiver(partner: TestPartner, platform: TestPlatform, flaws: Flaws) {
  const key = loadKey(partner.secret)
  const client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl, retries: 0 })
  const nonces = new Set<string>()
  return async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const answer = (status: number, code: number) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ code }))
    }
    let event: { eventType: string; audioId: string }
    try {
      const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Envelope
      if (nonces.has(envelope.nonce)) return answer(409, 4090)
      event = (flaws.skipsTagCheck ? openUnchecked(key, envelope) : open(envelope, key).plaintext) as never
      nonces.add(envelope.nonce)
    } catch {
      return answer(400, 4000)
    }
    const data = event.eventType !== 'recording.deleted'
    if (data && flaws.callback === 'before') await client.confirmReceipt(event.audioId)
    if (data && flaws.callback === 'after')
      response.once('finish', () => void client.confirmReceipt(event.audioId))
    answer(200, 2000)
  }
}

/** AES-GCM decryption that never checks the tag: the flaw a careless receiver has. */
function openUnchecked(key: EnvelopeKey, envelope: Envelope): unknown {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(envelope.nonce, 'base64'))
  return JSON.parse(decipher.update(Buffer.from(envelope.ciphertext, 'base64')).toString('utf8'))
}

const failures = (report: { items: { id: string; passed: boolean; severity: string }[] }) =>
  report.items.filter((item) => !item.passed && item.severity === 'failure').map((item) => item.id)

describe('the receiver check', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner
  let outbox: CallbackOutbox | undefined
  let partnerDb: Database | undefined

  before(async () => {
    // A push times out after 2 s, so a callback made before its answer is given up on after 1 s.
    platform = await startTestPlatform('pglite', { pushTimeoutSeconds: 2 })
    partner = await createPartner(platform, 'Check Co')
  })
  after(async () => {
    for (const server of servers) server.closeAllConnections()
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
    await outbox?.close()
    await partnerDb?.close()
    await platform?.stop()
  })

  test("the kit's receiver passes every item, stores nothing of it, and its callbacks are no receipts", async () => {
    const client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
    partnerDb = await emptyPglite()
    const store = await databaseRecordingStore(partnerDb)
    outbox = await openCallbackOutbox({
      database: partnerDb,
      confirm: (audioId, options) => client.confirmReceipt(audioId, options),
    })
    const handed: string[] = []
    const receiver = createPushReceiver({
      secret: partner.secret,
      keyVersion: partner.keyVersion,
      outbox,
      log: silentLogger,
      onRecording: async (push) => {
        handed.push(`onRecording ${push.audioId}`)
        await store.save(push)
      },
      onDeleted: async (deletion) => {
        handed.push(`onDeleted ${deletion.audioId}`)
        await store.delete(deletion)
      },
    })
    const url = await serve(receiver.handler)
    const report = await adminClientOf(platform).checkReceiver(partner.enterpriseId, url, 10)
    assert.equal(report.passed, true, JSON.stringify(report, null, 2))
    assert.deepEqual(
      report.items.filter((item) => !item.passed),
      [],
      'the warning item passes too',
    )
    assert.equal(report.items.length, 9)
    assert.match(report.items.find((item) => item.id === 'callbacks')?.evidence ?? '', /ms after the answer/)
    assert.deepEqual(handed, [], "a check push is never handed to the partner's handlers")
    assert.deepEqual(await partnerDb.query('SELECT audio_id FROM recordings'), [], 'nothing stored')
    assert.deepEqual(await partnerDb.query('SELECT audio_id FROM deleted_recordings'), [])
    const { db } = platform.context
    assert.deepEqual(await db.query('SELECT * FROM receipts'), [], 'a check callback is no receipt')
    const unrecorded = await db.query(
      'SELECT audio_id FROM receiver_checks WHERE called_back_at IS NULL AND audio_id LIKE $1',
      ['%_valid'],
    )
    assert.deepEqual(unrecorded, [], "the valid push's callback was recorded by the check")
  })

  test('a receiver that acknowledges a tampered envelope fails on that item only', async () => {
    const url = await serve(carelessReceiver(partner, platform, { skipsTagCheck: true, callback: 'after' }))
    const report = await adminClientOf(platform).checkReceiver(partner.enterpriseId, url, 10)
    assert.equal(report.passed, false)
    assert.deepEqual(failures(report), ['tampered-tag'])
    assert.match(
      report.items.find((item) => item.id === 'tampered-tag')?.evidence ?? '',
      /HTTP 200, code 2000/,
    )
  })

  test('a receiver that never calls back fails on the callbacks only', async () => {
    const url = await serve(carelessReceiver(partner, platform, { callback: 'never' }))
    const report = await adminClientOf(platform).checkReceiver(partner.enterpriseId, url, 2)
    assert.deepEqual(failures(report), ['callbacks'])
    assert.match(
      report.items.find((item) => item.id === 'callbacks')?.evidence ?? '',
      /no callback within 2 s/,
    )
  })

  test('a receiver that calls back before answering fails on the callbacks only', async () => {
    const url = await serve(carelessReceiver(partner, platform, { callback: 'before' }))
    const report = await adminClientOf(platform).checkReceiver(partner.enterpriseId, url, 10)
    assert.deepEqual(failures(report), ['callbacks'])
    assert.match(
      report.items.find((item) => item.id === 'callbacks')?.evidence ?? '',
      /called back before answering the push/,
    )
  })

  test('a URL the address policy refuses, or an unknown enterprise, is refused before anything is sent', async () => {
    const admin = adminClientOf(platform)
    await assert.rejects(admin.checkReceiver(partner.enterpriseId, 'ftp://example.com/x'), { code: 4001 })
    await assert.rejects(admin.checkReceiver(999_999, 'http://127.0.0.1:9/x'), { code: 4040 })
  })
})
