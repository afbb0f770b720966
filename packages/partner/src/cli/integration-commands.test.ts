import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { JsonObject } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { type CliRun, runCli } from '@earshot/test-kit/run-cli'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { EarshotClient } from '../client/earshot-client.js'

/*
 * `earshot-partner endpoints|deliveries|replay` with --json against a real platform: a partner adds an
 * endpoint for transcripts only, watches its failing deliveries with the receiver's answers, fixes the
 * receiver and replays; another enterprise's ids answer 4040.
 */

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

const transcript = {
  transcriptId: 1,
  transcriptText: 'hello there',
  sentences: [{ text: 'hello there', beginTime: 0, endTime: 900 }],
  durationMs: 900,
  wordsCount: 2,
}

const envOf = (platform: TestPlatform, partner: TestPartner) => ({
  EARSHOT_BASE_URL: platform.partnerUrl,
  EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
  EARSHOT_KEY_VERSION: String(partner.keyVersion),
  EARSHOT_SECRET: partner.secret,
})

/** The one JSON value a successful --json run printed. */
function answerOf(run: CliRun): JsonObject {
  assert.equal(run.code, 0, run.stderr)
  const lines = run.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  return JSON.parse(lines[0] as string)
}

/** The error a failed --json run printed. */
function errorOf(run: CliRun): { code: number | string; msg: string } {
  assert.equal(run.code, 1, run.stdout)
  return JSON.parse(run.stdout).error
}

interface Delivery {
  deliveryId: number
  audioId: string
  eventType: string
  state: string
  attempts: {
    startedAt: string
    durationMs: number | null
    httpStatus: number | null
    answer: string | null
  }[]
}

describe('earshot-partner endpoints, deliveries and replay against a platform', { timeout: 180_000 }, () => {
  let platform: TestPlatform
  const receivers: TestReceiver[] = []

  before(async () => {
    platform = await startTestPlatform('pglite', { pushRetryScheduleSeconds: [0.1, 0.1] })
  })
  after(async () => {
    for (const receiver of receivers) await receiver.close()
    await platform?.stop()
  })

  /** A partner, the CLI with its credentials, and a receiver that answers 503 while `broken`. */
  async function partnerWithReceiver(name: string) {
    const partner = await createPartner(platform, name)
    const env = envOf(platform, partner)
    const client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
    const state = { broken: false }
    const receiver = await startTestReceiver(partner.secret, {
      answer: () =>
        state.broken
          ? { status: 503, body: { code: 5030, msg: 'receiver down for maintenance' } }
          : { status: 200, body: { code: 2000 } },
      afterAnswer: (push, answer) => {
        if (answer.status === 200) void client.confirmReceipt(push.event.audioId).catch(() => undefined)
      },
    })
    receivers.push(receiver)
    const cli = (...args: string[]) => runCli(bin, args, env)
    return { partner, env, client, receiver, state, cli }
  }

  test('endpoints add (transcripts only), list, update, remove', async () => {
    const { receiver, cli } = await partnerWithReceiver('Endpoints Co')
    const added = answerOf(
      await cli(
        'endpoints',
        'add',
        receiver.url,
        '--events',
        'transcript_ready',
        '--description',
        'notes',
        '--json',
      ),
    )
    assert.deepEqual(added.eventTypes, ['recording.transcript_ready'])
    assert.equal(added.description, 'notes')
    assert.equal(added.enabled, true)

    const listed = answerOf(await cli('endpoints', 'list', '--json'))
    assert.deepEqual(listed, { items: [{ ...added, health: (listed.items as JsonObject[])[0]?.health }] })

    const id = String(added.endpointId)
    const updated = answerOf(
      await cli('endpoints', 'update', id, '--max-per-second', '5', '--disable', '--json'),
    )
    assert.deepEqual(
      [updated.maxPerSecond, updated.enabled, updated.eventTypes],
      [5, false, added.eventTypes],
    )

    const table = await cli('endpoints', 'list')
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /^ID\s+URL\s+EVENTS\s+STATE\s+HEALTH\s+RATE\s+WAITING\n/)
    assert.match(table.stdout, new RegExp(`${id}\\s+\\S+\\s+transcript_ready\\s+disabled`))
    assert.match(table.stdout, new RegExp(`endpoints update ${id} --enable`))

    assert.deepEqual(answerOf(await cli('endpoints', 'remove', id, '--json')), {
      endpointId: added.endpointId,
      cancelled: 0,
    })
    assert.deepEqual(answerOf(await cli('endpoints', 'list', '--json')), { items: [] })
  })

  test('deliveries show each attempt with the answer; replay one, then every failed one since a time', async () => {
    const { receiver, client, state, cli } = await partnerWithReceiver('Deliveries Co')
    await client.addEndpoint({ url: receiver.url, eventTypes: ['recording.transcript_ready'] })
    state.broken = true
    const since = new Date(Date.now() - 1_000).toISOString()
    const recorded = { deviceUid: 'dev', recordedAt: '2026-11-01T08:00:00Z' }
    const first = await ingest(platform, client.enterpriseId, { ...recorded, title: 'first', transcript })
    const second = await ingest(platform, client.enterpriseId, { ...recorded, title: 'second', transcript })
    await ingest(platform, client.enterpriseId, {
      ...recorded,
      title: 'audio only',
      denoiseUrl: 'https://media.example/a.mp3',
      recordDuration: 1_000,
    })

    const failed = await eventually(
      async () => {
        const page = answerOf(await cli('deliveries', '--state', 'failed', '--json'))
        return (page.items as unknown as Delivery[]).length === 2
          ? (page.items as unknown as Delivery[])
          : undefined
      },
      30_000,
      'both transcript deliveries failed',
    )
    assert.deepEqual(failed.map((each) => each.audioId).sort(), [first, second].sort())
    for (const delivery of failed) {
      assert.equal(delivery.eventType, 'recording.transcript_ready', 'the endpoint gets transcripts only')
      assert.equal(delivery.attempts.length, 3, 'the first attempt and two retries')
      for (const attempt of delivery.attempts) {
        assert.equal(attempt.httpStatus, 503)
        assert.match(attempt.answer ?? '', /receiver down for maintenance/)
        assert.equal(typeof attempt.durationMs, 'number')
      }
    }
    const all = answerOf(await cli('deliveries', '--json'))
    assert.equal((all.items as JsonObject[]).length, 2, 'no delivery of the audio-only recording')
    assert.deepEqual(answerOf(await cli('deliveries', '--event-type', 'audio_ready', '--json')).items, [])

    const firstPage = answerOf(await cli('deliveries', '--size', '1', '--json'))
    assert.equal(firstPage.hasMore, true)
    const nextPage = answerOf(
      await cli('deliveries', '--size', '1', '--cursor', String(firstPage.nextCursor), '--json'),
    )
    assert.deepEqual(
      [...(firstPage.items as JsonObject[]), ...(nextPage.items as JsonObject[])]
        .map((each) => each.deliveryId)
        .sort(),
      (all.items as JsonObject[]).map((each) => each.deliveryId).sort(),
    )
    assert.equal(nextPage.hasMore, false)
    assert.equal(nextPage.nextCursor, null)
    const table = await cli('deliveries', '--size', '1')
    assert.match(table.stdout, /HTTP 503 in \d+ ms: .*receiver down/)
    assert.match(table.stdout, /More: add --cursor \S+/)

    // Replayed while the receiver is still down: one more attempt, failed again.
    const one = failed[0] as Delivery
    assert.deepEqual(answerOf(await cli('replay', '--delivery', String(one.deliveryId), '--json')), {
      replayed: 1,
    })
    await eventually(
      async () => {
        const page = answerOf(
          await cli('deliveries', '--audio-id', one.audioId, '--state', 'failed', '--json'),
        )
        return (page.items as unknown as Delivery[])[0]?.attempts.length === 6
      },
      30_000,
      'the replayed delivery failed again after three more attempts',
    )

    state.broken = false
    assert.deepEqual(answerOf(await cli('replay', '--since', since, '--json')), { replayed: 2 })
    await eventually(
      async () => {
        const page = answerOf(await cli('deliveries', '--state', 'confirmed', '--json'))
        return (page.items as JsonObject[]).length === 2
      },
      30_000,
      'both deliveries confirmed once replayed to the mended receiver',
    )
    const human = await cli('replay', '--since', since, '--states', 'failed')
    assert.equal(human.stdout, 'Replayed 0 deliveries.\n')
  })

  test("another enterprise's endpoint and delivery ids answer 4040, as unknown ones do", async () => {
    const owner = await partnerWithReceiver('Owner Co')
    const endpoint = await owner.client.addEndpoint({ url: owner.receiver.url })
    const audioId = await ingest(platform, owner.partner.enterpriseId, {
      deviceUid: 'dev',
      title: 'theirs',
      recordedAt: '2026-11-01T08:00:00Z',
      transcript,
    })
    const [delivery] = (
      await eventually(
        async () => {
          const page = await owner.client.listDeliveries({ audioId })
          return page.items.length > 0 ? page : undefined
        },
        20_000,
        "the owner's delivery",
      )
    ).items
    const intruder = await partnerWithReceiver('Intruder Co')
    const theirs = String(endpoint.endpointId)
    const unknown = '999999'
    for (const [args, id] of [
      [['endpoints', 'update', theirs, '--disable'], theirs],
      [['endpoints', 'remove', theirs], theirs],
      [['replay', '--delivery', String(delivery?.deliveryId)], String(delivery?.deliveryId)],
    ] as const) {
      const refused = errorOf(await intruder.cli(...args, '--json'))
      const asUnknown = errorOf(
        await intruder.cli(...args.map((arg) => (arg === id ? unknown : arg)), '--json'),
      )
      assert.equal(refused.code, 4040, args.join(' '))
      assert.equal(refused.msg.replaceAll(id, 'ID'), asUnknown.msg.replaceAll(unknown, 'ID'))
    }
    assert.deepEqual(answerOf(await intruder.cli('deliveries', '--audio-id', audioId, '--json')).items, [])
    assert.equal((await owner.client.listEndpoints()).items[0]?.enabled, true, 'left as it was')
  })
})
