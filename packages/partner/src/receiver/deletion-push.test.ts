import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { EarshotClient } from '../client/earshot-client.js'
import { silentLogger } from '../logging/receiver-logger.js'
import { type CallbackOutbox, openCallbackOutbox } from '../outbox/callback-outbox.js'
import { createPushReceiver, type ReceivedDeletion, type ReceivedPush } from './push-receiver.js'

describe('a deletion pushed by a real platform', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let server: Server | undefined
  let outbox: CallbackOutbox | undefined

  before(async () => {
    platform = await startTestPlatform('pglite', { pushAllowPrivate: true })
  })
  after(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
    await outbox?.close()
    await platform?.stop()
  })

  test('reaches onDeleted exactly once, and the erasure is confirmed by the callback', async () => {
    const partner = await createPartner(platform, 'Deleting Co')
    const client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
    outbox = await openCallbackOutbox({
      confirm: (audioId, options) => client.confirmReceipt(audioId, options),
      log: silentLogger,
    })
    const stored: ReceivedPush[] = []
    const deleted: ReceivedDeletion[] = []
    const receiver = createPushReceiver({
      secret: partner.secret,
      outbox,
      log: silentLogger,
      onRecording: async (push) => void stored.push(push),
      onDeleted: async (deletion) => void deleted.push(deletion),
    })
    server = createServer(receiver.handler)
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
    const pushUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/earshot/push`
    await adminCall(platform, 'setPushUrl', {
      params: { enterpriseId: partner.enterpriseId },
      body: { pushUrl },
    })

    const audioId = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'DEV-DEL',
      title: 'to be deleted',
      recordedAt: '2026-03-01T10:00:00+08:00',
      denoiseUrl: 'https://media.example/deleted.mp3',
      recordDuration: 1000,
    })
    const deliveries = async () =>
      (await adminCall(platform, 'listDeliveries', { query: { audioId } })).deliveries
    // The partner had it: the push was acknowledged and confirmed before the deletion.
    await eventually(
      async () => (await deliveries())[0]?.state === 'confirmed',
      30_000,
      'the recording pushed and confirmed',
    )
    const removed = await adminCall(platform, 'deleteRecording', {
      params: { enterpriseId: partner.enterpriseId, audioId },
    })
    assert.deepEqual(removed, { deleted: audioId })

    const deletion = await eventually(
      async () =>
        (await deliveries()).find((d) => d.eventType === 'recording.deleted' && d.state === 'confirmed'),
      30_000,
      'the deletion pushed and confirmed by the callback',
    )
    // Confirmed is final: the platform pushes it no more, so these are all the calls there will be.
    assert.deepEqual(deleted, [
      {
        eventId: deletion.eventId,
        eventType: 'recording.deleted',
        audioId,
        occurredAt: deleted[0]?.occurredAt,
        data: {},
      },
    ])
    assert.ok(Date.parse(deleted[0]?.occurredAt as string) > 0)
    assert.deepEqual(
      stored.map((push) => [push.audioId, push.eventType]),
      [[audioId, 'recording.audio_ready']],
    )
    // The outbox records the outcome just after the platform took the callback.
    const outboxOf = outbox
    await eventually(
      async () => (await outboxOf.callbacks({ audioId })).every((callback) => callback.state === 'confirmed'),
      30_000,
      'the outbox to record both confirmations',
    )
    // The deletion's callback confirms the erasure; the platform answered it 2000 (the partner had it)
    // and recorded the confirmation.
    assert.deepEqual(
      (await outbox.callbacks({ audioId })).map((callback) => [callback.eventType, callback.erased]).sort(),
      [
        ['recording.audio_ready', false],
        ['recording.deleted', true],
      ],
    )
    const confirmed = await platform.context.db.query(
      'SELECT 1 FROM erasure_confirmations WHERE audio_id = $1',
      [audioId],
    )
    assert.equal(confirmed.length, 1)
  })
})
