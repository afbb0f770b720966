import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { PushEventType } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, adminRefusal, createPartner, ingest } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { runCli } from '@earshot/test-kit/run-cli'
import { type PushAnswer, startTestReceiver } from '@earshot/test-kit/test-receiver'
import type { AdminBody } from '../admin-client/admin-client.js'
import { deliveryQueue } from './delivery-store.js'

/*
 * A disabled endpoint's events wait held and catch up in order once it is enabled (or are discarded); an
 * operator replays or cancels a queued delivery; the queue's sweep lets go of what a concurrent statement
 * could have left queued or held.
 */

const OK: PushAnswer = { status: 200, body: { code: 2000 } }
const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

let counter = 0
const recording = () => ({
  deviceUid: 'DEV-ORDER',
  title: `order ${++counter}`,
  recordedAt: '2026-03-01T10:00:00+08:00',
  denoiseUrl: `https://media.example/order-${counter}.mp3`,
  recordDuration: 1000,
})

/** Three events of one recording, in this order: audio_ready, transcript_ready, updated. */
async function threeEvents(platform: TestPlatform, enterpriseId: number): Promise<string> {
  const audioId = await ingest(platform, enterpriseId, recording())
  const params = { enterpriseId, audioId }
  const transcript = {
    transcriptId: 1,
    transcriptText: 'words',
    sentences: [{ text: 'words', beginTime: 0, endTime: 500 }],
    durationMs: 500,
    wordsCount: 1,
  }
  await adminCall(platform, 'attachTranscript', { params, body: transcript })
  await adminCall(platform, 'updateRecording', { params, body: { title: 'renamed' } })
  return audioId
}

async function statesOf(platform: TestPlatform, audioId: string): Promise<string[]> {
  const rows = await platform.context.db.query<{ state: string }>(
    'SELECT state FROM deliveries WHERE audio_id = $1 ORDER BY delivery_id',
    [audioId],
  )
  return rows.map((row) => row.state)
}

async function endpointOf(platform: TestPlatform, enterpriseId: number, url: string): Promise<number> {
  const added = await adminCall(platform, 'addEndpoint', { params: { enterpriseId }, body: { url } })
  return added.endpointId
}

function setEnabled(
  platform: TestPlatform,
  enterpriseId: number,
  endpointId: number,
  body: AdminBody<'updateEndpoint'>,
) {
  return adminCall(platform, 'updateEndpoint', { params: { enterpriseId, endpointId }, body })
}

for (const backend of testBackends) {
  describe(`${backend}: a disabled endpoint catches up in order`, { timeout: 60_000 }, () => {
    let platform: TestPlatform
    const arrived: string[] = []
    before(async () => {
      platform = await startTestPlatform(backend, { pushConfirmWindowSeconds: 60 })
    })
    after(async () => {
      await platform?.stop()
    })

    test('events made while it is disabled are created held for it and pushed in order once it is enabled', async () => {
      const partner = await createPartner(platform)
      const pushing = await startTestReceiver(partner.secret, {
        answer: (push) => {
          arrived.push(`${push.event.audioId} ${push.event.eventType}`)
          return OK
        },
      })
      try {
        const endpointId = await endpointOf(platform, partner.enterpriseId, pushing.url)
        await setEnabled(platform, partner.enterpriseId, endpointId, { enabled: false })
        const audioId = await threeEvents(platform, partner.enterpriseId)
        assert.deepEqual(await statesOf(platform, audioId), ['held', 'queued', 'queued'])
        await setEnabled(platform, partner.enterpriseId, endpointId, { enabled: true })
        await eventually(
          async () => (await statesOf(platform, audioId)).every((state) => state === 'acked'),
          30_000,
          'the three deliveries acknowledged',
        )
        assert.deepEqual(
          arrived.filter((line) => line.startsWith(audioId)),
          [PushEventType.AUDIO_READY, PushEventType.TRANSCRIPT_READY, PushEventType.UPDATED].map(
            (type) => `${audioId} ${type}`,
          ),
        )
      } finally {
        await pushing.close()
      }
    })
  })

  describe(`${backend}: held and queued deliveries, by an operator and by the sweep`, {
    timeout: 60_000,
  }, () => {
    let platform: TestPlatform
    before(async () => {
      // No dispatcher: deliveries stay as each test leaves them.
      platform = await startTestPlatform(backend, { pushDispatch: false })
    })
    after(async () => {
      await platform?.stop()
    })

    const db = () => platform.context.db
    /** The ids of the three deliveries of threeEvents' recording, in order. */
    const idsOf = async (audioId: string) =>
      (
        await db().query<{ delivery_id: number }>(
          'SELECT delivery_id FROM deliveries WHERE audio_id = $1 ORDER BY delivery_id',
          [audioId],
        )
      ).map((row) => Number(row.delivery_id)) as [number, number, number]

    /** The sweep's repair, run until it has looked at every queued delivery (it goes a batch at a time). */
    async function sweepAll(): Promise<void> {
      for (let i = 0; i < 3; i++) await deliveryQueue.repair(db())
    }

    test('enabling with discardHeld (and --discard-held) cancels what it held, and says how many', async () => {
      const partner = await createPartner(platform)
      const endpointId = await endpointOf(platform, partner.enterpriseId, 'http://127.0.0.1:9/discard')
      await setEnabled(platform, partner.enterpriseId, endpointId, { enabled: false })
      const first = await threeEvents(platform, partner.enterpriseId)
      assert.deepEqual(await statesOf(platform, first), ['held', 'queued', 'queued'])
      const refused = await adminRefusal(platform, 'updateEndpoint', {
        params: { enterpriseId: partner.enterpriseId, endpointId },
        body: { discardHeld: true },
      })
      assert.equal(refused.status, 400, refused.message)
      const enabled = await setEnabled(platform, partner.enterpriseId, endpointId, {
        enabled: true,
        discardHeld: true,
      })
      assert.deepEqual([enabled.enabled, enabled.discarded], [true, 3])
      assert.deepEqual(await statesOf(platform, first), ['cancelled', 'cancelled', 'cancelled'])

      await setEnabled(platform, partner.enterpriseId, endpointId, { enabled: false })
      const second = await threeEvents(platform, partner.enterpriseId)
      const env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      const run = await runCli(
        cli,
        ['endpoints', 'update', String(endpointId), '--enable', '--discard-held', '--json'],
        env,
      )
      assert.equal(run.code, 0, run.stderr)
      const answer = JSON.parse(run.stdout) as { enabled: boolean; discarded: number }
      assert.deepEqual([answer.enabled, answer.discarded], [true, 3])
      assert.deepEqual(await statesOf(platform, second), ['cancelled', 'cancelled', 'cancelled'])
    })

    test('an operator replays a queued delivery (pushed now), and cancels one (the next goes)', async () => {
      const partner = await createPartner(platform)
      await endpointOf(platform, partner.enterpriseId, 'http://127.0.0.1:9/queued')
      const audioId = await threeEvents(platform, partner.enterpriseId)
      const [, second, third] = await idsOf(audioId)
      assert.deepEqual(await statesOf(platform, audioId), ['pending', 'queued', 'queued'])
      const replayed = await adminCall(platform, 'replayDelivery', { params: { deliveryId: third } })
      assert.equal(replayed.delivery.state, 'pending')

      const env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      const run = await runCli(cli, ['deliveries', 'cancel', String(second), '--json'], env)
      assert.equal(run.code, 0, run.stderr)
      assert.deepEqual(JSON.parse(run.stdout), { cancelled: 1 })
      assert.deepEqual(await statesOf(platform, audioId), ['pending', 'cancelled', 'pending'])
      const again = await adminRefusal(platform, 'cancelDelivery', { params: { deliveryId: second } })
      assert.equal(again.status, 400, again.message)

      // Cancelling the one that holds a queued delivery back lets that one go.
      const next = await threeEvents(platform, partner.enterpriseId)
      const [head] = await idsOf(next)
      await adminCall(platform, 'cancelDelivery', { params: { deliveryId: head } })
      assert.deepEqual(await statesOf(platform, next), ['cancelled', 'pending', 'queued'])
    })

    test("a held deletion resumed still waits for the deleted recording's attempt on the wire", async () => {
      const partner = await createPartner(platform)
      const endpointId = await endpointOf(platform, partner.enterpriseId, 'http://127.0.0.1:9/wire')
      const audioId = await ingest(platform, partner.enterpriseId, recording())
      const ids = await idsOf(audioId)
      const claims = await deliveryQueue.claim(db(), { claimant: 'test', limit: 1, leaseSeconds: 600, ids })
      assert.deepEqual(
        claims.map((claim) => claim.id),
        ids,
      )
      await setEnabled(platform, partner.enterpriseId, endpointId, { enabled: false })
      await adminCall(platform, 'deleteRecording', {
        params: { enterpriseId: partner.enterpriseId, audioId },
      })
      assert.deepEqual(await statesOf(platform, audioId), ['cancelled', 'held'])
      await setEnabled(platform, partner.enterpriseId, endpointId, { enabled: true })
      const [deletion] = await db().query<{ state: string; waits: boolean }>(
        `SELECT state, due_at > now() + interval '5 minutes' AS waits FROM deliveries
          WHERE audio_id = $1 AND event_type = 'recording.deleted'`,
        [audioId],
      )
      assert.deepEqual(deletion, { state: 'pending', waits: true })
    })

    test('the sweep lets go of a queued delivery with nothing open before it, and resumes held ones of an endpoint not paused', async () => {
      const partner = await createPartner(platform)
      await endpointOf(platform, partner.enterpriseId, 'http://127.0.0.1:9/stranded')
      const audioId = await threeEvents(platform, partner.enterpriseId)
      const [head] = await idsOf(audioId)
      // As two earlier deliveries finished at once could leave it: the head done, the next still queued,
      // and the trigger's mark that it could not tell.
      await db().query('ALTER TABLE deliveries DISABLE TRIGGER deliveries_next_in_order')
      try {
        await db().query(`UPDATE deliveries SET state = 'cancelled', due_at = NULL WHERE delivery_id = $1`, [
          head,
        ])
      } finally {
        await db().query('ALTER TABLE deliveries ENABLE TRIGGER deliveries_next_in_order')
      }
      await db().query(
        'INSERT INTO delivery_rechecks (endpoint_id, audio_id) SELECT endpoint_id, audio_id FROM deliveries WHERE delivery_id = $1',
        [head],
      )
      assert.deepEqual(await statesOf(platform, audioId), ['cancelled', 'queued', 'queued'])
      await sweepAll()
      assert.deepEqual(await statesOf(platform, audioId), ['cancelled', 'pending', 'queued'])

      // Held on an endpoint enabled since, as a scheduling that decided before the enable would leave it.
      const held = await ingest(platform, partner.enterpriseId, recording())
      await db().query(`UPDATE deliveries SET state = 'held' WHERE audio_id = $1`, [held])
      await sweepAll()
      assert.deepEqual(await statesOf(platform, held), ['pending'])

      // One of an endpoint still disabled stays held.
      const other = await createPartner(platform)
      const paused = await endpointOf(platform, other.enterpriseId, 'http://127.0.0.1:9/paused')
      await setEnabled(platform, other.enterpriseId, paused, { enabled: false })
      const waiting = await ingest(platform, other.enterpriseId, recording())
      await sweepAll()
      assert.deepEqual(await statesOf(platform, waiting), ['held'])
    })
  })
}
