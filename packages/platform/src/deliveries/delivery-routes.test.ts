import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { expectCode, ingest, type Reply } from '@earshot/test-kit/calls'
import { confirmReceipts } from './delivery-receipts.js'
import { deliveryMachine } from './delivery-states.js'
import { DELIVERY_STATES, type DeliveryState } from './delivery-store.js'
import type { DeliveryView } from './delivery-views.js'

/** The operators' delivery API: list with filters, show, replay one or a range. */

const PUSH_URL = 'http://127.0.0.1:9/push'

const transcript = {
  transcriptId: 7,
  transcriptText: 'hello',
  sentences: [{ text: 'hello', beginTime: 0, endTime: 500 }],
  durationMs: 500,
  wordsCount: 1,
}

function recording(i: number, withTranscript = false): Record<string, unknown> {
  return {
    deviceUid: 'dev-push',
    title: `pushed ${i}`,
    recordedAt: '2026-03-01T10:00:00+08:00',
    denoiseUrl: `https://cdn.example/${i}.mp3`,
    recordDuration: 1000 + i,
    ...(withTranscript && { transcript }),
  }
}

for (const backend of testBackends) {
  describe(`delivery routes (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let recordingCounter = 0

    async function call(
      method: string,
      path: string,
      body?: unknown,
      token: string | null = platform.adminToken,
    ): Promise<Reply> {
      const response = await fetch(`${platform.adminUrl}/admin/v1${path}`, {
        method,
        headers: {
          ...(token !== null && { authorization: `Bearer ${token}` }),
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      })
      return {
        status: response.status,
        headers: response.headers,
        body: (await response.json()) as Reply['body'],
      }
    }

    async function list(query: string): Promise<DeliveryView[]> {
      const reply = await call('GET', `/deliveries?${query}`)
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      assert.deepEqual(Object.keys(reply.body), ['deliveries'])
      return reply.body.deliveries as DeliveryView[]
    }

    async function refused(method: string, path: string, code: number, msg: RegExp, body?: unknown) {
      const reply = await call(method, path, body)
      expectCode(reply, code)
      assert.match(reply.body.msg as string, msg)
    }

    async function createEnterprise(pushUrl: string | null = PUSH_URL): Promise<number> {
      const reply = await call('POST', '/enterprises', { name: 'Pushed Co', ...(pushUrl && { pushUrl }) })
      assert.equal(reply.status, 201, JSON.stringify(reply.body))
      return reply.body.enterpriseId as number
    }

    /** An enterprise with a push URL and `count` audio-only recordings: one pending delivery each. */
    async function enterpriseWithDeliveries(count: number): Promise<{ enterpriseId: number; ids: number[] }> {
      const enterpriseId = await createEnterprise()
      for (let i = 0; i < count; i++) await ingest(platform, enterpriseId, recording(++recordingCounter))
      return { enterpriseId, ids: await deliveryIds(enterpriseId) }
    }

    /** The enterprise's delivery ids, oldest first. */
    async function deliveryIds(enterpriseId: number): Promise<number[]> {
      const rows = await platform.context.db.query<{ id: number }>(
        'SELECT delivery_id AS id FROM deliveries WHERE enterprise_id = $1 ORDER BY delivery_id',
        [enterpriseId],
      )
      return rows.map((row) => row.id)
    }

    /** Puts a delivery in a state directly, along the transitions the dispatcher or a callback would take. */
    async function setState(deliveryId: number, state: DeliveryState): Promise<void> {
      const { db } = platform.context
      const [row] = await db.query<{ state: DeliveryState }>(
        'SELECT state FROM deliveries WHERE delivery_id = $1',
        [deliveryId],
      )
      const from = row?.state ?? 'pending'
      const path = deliveryMachine.path(from, state)
      assert.ok(path, `no transitions lead from ${from} to ${state}`)
      for (const step of path) {
        const dueAt =
          step === 'acked'
            ? "now() + interval '10 minutes'"
            : deliveryMachine.final.includes(step)
              ? 'NULL'
              : 'now()'
        await db.query(`UPDATE deliveries SET state = $2, due_at = ${dueAt} WHERE delivery_id = $1`, [
          deliveryId,
          step,
        ])
      }
      await db.query(
        `UPDATE deliveries SET failures = 15, acks = 4,
                acked_at = CASE WHEN $2 IN ('acked', 'confirmed', 'unconfirmed') THEN now() END
          WHERE delivery_id = $1`,
        [deliveryId, state],
      )
    }

    async function stored(deliveryId: number) {
      const [row] = await platform.context.db.query<{
        state: string
        due: boolean
        failures: number
        acks: number
      }>('SELECT state, due_at IS NOT NULL AS due, failures, acks FROM deliveries WHERE delivery_id = $1', [
        deliveryId,
      ])
      return row
    }

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
    })

    after(async () => {
      await platform?.stop()
    })

    test('an ingested recording makes its deliveries, in order, listed newest first with their fields', async () => {
      const enterpriseId = await createEnterprise()
      const audioId = await ingest(platform, enterpriseId, recording(++recordingCounter, true))
      const deliveries = await list(`enterpriseId=${enterpriseId}`)
      assert.equal(deliveries.length, 2)
      const [newest, oldest] = deliveries as [DeliveryView, DeliveryView]
      assert.ok(newest.deliveryId > oldest.deliveryId)
      assert.deepEqual(Object.keys(newest).sort(), [
        'ackedAt',
        'attempts',
        'audioId',
        'confirmedAt',
        'createdAt',
        'deliveryId',
        'endpointId',
        'enterpriseId',
        'eventId',
        'eventType',
        'nextAttemptAt',
        'state',
      ])
      assert.deepEqual(deliveries.map((each) => each.eventType).sort(), [
        'recording.audio_ready',
        'recording.transcript_ready',
      ])
      // The transcript's push waits for the audio's: a recording's events reach an endpoint in order.
      assert.deepEqual(
        deliveries.map((each) => [each.eventType, each.state]),
        [
          ['recording.transcript_ready', 'queued'],
          ['recording.audio_ready', 'pending'],
        ],
      )
      for (const each of deliveries) {
        assert.equal(each.enterpriseId, enterpriseId)
        assert.equal(each.audioId, audioId)
        assert.deepEqual(each.attempts, [])
        assert.match(each.eventId, /^[0-9a-f-]{36}$/)
        assert.match(each.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        assert.equal(each.ackedAt, null)
        assert.equal(each.confirmedAt, null)
      }
      assert.notEqual(newest.eventId, oldest.eventId)
      // Only the pending one has a time: the queued one waits for it, not for a time.
      assert.match(oldest.nextAttemptAt ?? '', /Z$/)
      assert.equal(newest.nextAttemptAt, null)
    })

    test('an enterprise without a push URL has no deliveries', async () => {
      const enterpriseId = await createEnterprise(null)
      await ingest(platform, enterpriseId, recording(++recordingCounter))
      assert.deepEqual(await list(`enterpriseId=${enterpriseId}`), [])
    })

    test('filters by enterprise, state and audioId, alone and together', async () => {
      const a = await enterpriseWithDeliveries(3)
      const b = await enterpriseWithDeliveries(2)
      const [a0, a1, a2] = a.ids as [number, number, number]
      const [b0] = b.ids as [number]
      await setState(a0, 'failed')
      await setState(a2, 'failed')
      await setState(b0, 'failed')

      assert.deepEqual(
        (await list(`enterpriseId=${a.enterpriseId}`)).map((each) => each.deliveryId),
        [a2, a1, a0],
      )
      const failedOfA = await list(`enterpriseId=${a.enterpriseId}&state=failed`)
      assert.deepEqual(
        failedOfA.map((each) => each.deliveryId),
        [a2, a0],
      )
      assert.ok(failedOfA.every((each) => each.state === 'failed' && each.nextAttemptAt === null))

      const failedAnywhere = (await list('state=failed&limit=1000')).map((each) => each.deliveryId)
      for (const id of [a0, a2, b0]) assert.ok(failedAnywhere.includes(id))
      assert.ok(!failedAnywhere.includes(a1))

      const audioId = (await list(`enterpriseId=${a.enterpriseId}`)).find((each) => each.deliveryId === a1)
        ?.audioId as string
      const byAudio = await list(`audioId=${encodeURIComponent(audioId)}`)
      assert.deepEqual(
        byAudio.map((each) => each.deliveryId),
        [a1],
      )
      assert.deepEqual(await list(`audioId=${audioId}&state=failed`), [])
      assert.deepEqual(await list(`enterpriseId=${b.enterpriseId}&audioId=${audioId}`), [])
      assert.deepEqual(await list('enterpriseId=999999'), [])
    })

    test('pages newest first with limit and the before cursor', async () => {
      const { enterpriseId, ids } = await enterpriseWithDeliveries(5)
      const newestFirst = [...ids].reverse()
      const page1 = await list(`enterpriseId=${enterpriseId}&limit=2`)
      assert.deepEqual(
        page1.map((each) => each.deliveryId),
        newestFirst.slice(0, 2),
      )
      const page2 = await list(`enterpriseId=${enterpriseId}&limit=2&before=${page1.at(-1)?.deliveryId}`)
      assert.deepEqual(
        page2.map((each) => each.deliveryId),
        newestFirst.slice(2, 4),
      )
      const page3 = await list(`enterpriseId=${enterpriseId}&limit=2&before=${page2.at(-1)?.deliveryId}`)
      assert.deepEqual(
        page3.map((each) => each.deliveryId),
        newestFirst.slice(4),
      )
      assert.deepEqual(await list(`enterpriseId=${enterpriseId}&before=${ids[0]}`), [])
      // Without a limit, up to 100.
      assert.equal((await list(`enterpriseId=${enterpriseId}`)).length, 5)
    })

    test('lists and shows attempts, oldest first, with their outcome, status, code, error and answer', async () => {
      const { ids } = await enterpriseWithDeliveries(1)
      const deliveryId = ids[0] as number
      await platform.context.db.query(
        `INSERT INTO delivery_attempts (delivery_id, claim_no, started_at, duration_ms, outcome, http_status,
                                        response_code, error, next_attempt_at, claimed_by, answer)
         VALUES ($1, 2, '2026-03-01T02:00:00Z', 40, 'acked', 200, 2000, NULL, NULL, 'test', '{"code":2000}'),
                ($1, 1, '2026-03-01T01:00:00Z', 1234, 'failed', 503, NULL, 'HTTP 503', '2026-03-01T01:00:15Z', 'test',
                 'upstream down')`,
        [deliveryId],
      )
      await setState(deliveryId, 'acked')
      const expected = [
        {
          attemptNo: 1,
          startedAt: '2026-03-01T01:00:00.000Z',
          durationMs: 1234,
          outcome: 'failed',
          httpStatus: 503,
          responseCode: null,
          error: 'HTTP 503',
          answer: 'upstream down',
          nextAttemptAt: '2026-03-01T01:00:15.000Z',
        },
        {
          attemptNo: 2,
          startedAt: '2026-03-01T02:00:00.000Z',
          durationMs: 40,
          outcome: 'acked',
          httpStatus: 200,
          responseCode: 2000,
          error: null,
          answer: '{"code":2000}',
          nextAttemptAt: null,
        },
      ]
      const shown = await call('GET', `/deliveries/${deliveryId}`)
      assert.equal(shown.status, 200, JSON.stringify(shown.body))
      const delivery = shown.body as unknown as DeliveryView
      assert.equal(delivery.deliveryId, deliveryId)
      assert.equal(delivery.state, 'acked')
      assert.deepEqual(delivery.attempts, expected)
      assert.match(delivery.ackedAt ?? '', /Z$/)
      assert.match(delivery.nextAttemptAt ?? '', /Z$/, 'an acked delivery shows when it is re-pushed')

      const [listed] = await list(`audioId=${delivery.audioId}`)
      assert.deepEqual(listed, delivery)
    })

    test('an unknown delivery is 4040; a malformed delivery id is 4001 naming deliveryId', async () => {
      await refused('GET', '/deliveries/999999', 4040, /^no delivery 999999$/)
      await refused('POST', '/deliveries/999999/replay', 4040, /^no delivery 999999$/)
      for (const bad of ['abc', '0', '-1', '1.5', '1234567890123456']) {
        await refused('GET', `/deliveries/${bad}`, 4001, /^deliveryId: /)
        await refused('POST', `/deliveries/${bad}/replay`, 4001, /^deliveryId: /)
      }
    })

    test('every bad list query value is refused with 4001 naming its field', async () => {
      await refused(
        'GET',
        '/deliveries?state=bogus',
        4001,
        new RegExp(`^state: must be one of ${DELIVERY_STATES.join(', ')}$`),
      )
      await refused('GET', '/deliveries?state=', 4001, /^state: /)
      await refused('GET', '/deliveries?state=failed&state=acked', 4001, /^state: must be given once/)
      for (const bad of ['x', '0', '-3', '', '2.5']) {
        await refused('GET', `/deliveries?enterpriseId=${bad}`, 4001, /^enterpriseId: /)
        await refused('GET', `/deliveries?before=${bad}`, 4001, /^before: /)
      }
      for (const bad of ['0', '1001', 'ten', '', '-1']) {
        await refused('GET', `/deliveries?limit=${bad}`, 4001, /^limit: must be an integer from 1 to 1000$/)
      }
      await refused('GET', '/deliveries?audioId=', 4001, /^audioId: /)
      await refused('GET', `/deliveries?audioId=${'a'.repeat(129)}`, 4001, /^audioId: /)
      await refused('GET', '/deliveries?audioId=has%20space', 4001, /^audioId: /)
      await refused('GET', '/deliveries?page=2', 4001, /^page: is not a filter/)
      // The edges are accepted.
      assert.ok(Array.isArray(await list('limit=1')))
      assert.ok(Array.isArray(await list('limit=1000')))
    })

    test('replaying a failed delivery puts it back to pending, due now, with a fresh schedule', async () => {
      const { ids } = await enterpriseWithDeliveries(1)
      const deliveryId = ids[0] as number
      await setState(deliveryId, 'failed')
      const before = (await call('GET', `/deliveries/${deliveryId}`)).body as unknown as DeliveryView

      const reply = await call('POST', `/deliveries/${deliveryId}/replay`)
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      assert.deepEqual(Object.keys(reply.body), ['deliveryId', 'replayed', 'delivery'])
      assert.equal(reply.body.deliveryId, deliveryId)
      assert.equal(reply.body.replayed, true)
      const delivery = reply.body.delivery as DeliveryView
      assert.equal(delivery.state, 'pending')
      assert.equal(delivery.eventId, before.eventId, 'the same eventId: the partner dedups')
      assert.match(delivery.nextAttemptAt ?? '', /Z$/)
      assert.deepEqual(await stored(deliveryId), { state: 'pending', due: true, failures: 0, acks: 1 })

      // Once pending, it cannot be replayed again.
      await refused(
        'POST',
        `/deliveries/${deliveryId}/replay`,
        4001,
        new RegExp(
          `^state: delivery ${deliveryId} is pending; only failed, unconfirmed or queued deliveries can be replayed$`,
        ),
      )
    })

    test('an unconfirmed delivery can be replayed; acked, confirmed and in-flight ones are refused', async () => {
      const { ids } = await enterpriseWithDeliveries(4)
      const [unconfirmed, acked, confirmed, inFlight] = ids as [number, number, number, number]
      await setState(unconfirmed, 'unconfirmed')
      await setState(acked, 'acked')
      await setState(confirmed, 'confirmed')
      await setState(inFlight, 'in_flight')

      const reply = await call('POST', `/deliveries/${unconfirmed}/replay`)
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      assert.equal((reply.body.delivery as DeliveryView).state, 'pending')
      // setState left acks 4: the replay keeps the delivery acknowledged (acks 1, its re-pushes allowed again),
      // so the callback the partner sends late still confirms it.
      assert.deepEqual(await stored(unconfirmed), { state: 'pending', due: true, failures: 0, acks: 1 })
      const [owner] = await platform.context.db.query<{ enterprise_id: number; audio_id: string }>(
        'SELECT enterprise_id, audio_id FROM deliveries WHERE delivery_id = $1',
        [unconfirmed],
      )
      assert.ok(owner)
      await confirmReceipts(platform.context.db, [
        { enterpriseId: owner.enterprise_id, audioId: owner.audio_id },
      ])
      assert.equal((await stored(unconfirmed))?.state, 'confirmed')

      for (const [id, state] of [
        [acked, 'acked'],
        [confirmed, 'confirmed'],
        [inFlight, 'in_flight'],
      ] as const) {
        const before = await stored(id)
        await refused(
          'POST',
          `/deliveries/${id}/replay`,
          4001,
          new RegExp(
            `^state: delivery ${id} is ${state}; only failed, unconfirmed or queued deliveries can be replayed$`,
          ),
        )
        assert.deepEqual(await stored(id), before, 'a refused replay changes nothing')
      }
    })

    test('a range replay replays only the enterprise’s failed and unconfirmed deliveries in [from, to)', async () => {
      const a = await enterpriseWithDeliveries(7)
      const b = await enterpriseWithDeliveries(1)
      const [atFrom, inside, unconfirmed, acked, pending, atTo, earlier] = a.ids as [
        number,
        number,
        number,
        number,
        number,
        number,
        number,
      ]
      const createdAt: [number, string, DeliveryState][] = [
        [atFrom, '2026-02-01T00:00:00Z', 'failed'],
        [inside, '2026-02-01T12:00:00Z', 'failed'],
        [unconfirmed, '2026-02-01T13:00:00Z', 'unconfirmed'],
        [acked, '2026-02-01T14:00:00Z', 'acked'],
        [pending, '2026-02-01T15:00:00Z', 'pending'],
        [atTo, '2026-02-02T00:00:00Z', 'failed'],
        [earlier, '2026-01-31T23:59:59.999Z', 'failed'],
        [b.ids[0] as number, '2026-02-01T12:00:00Z', 'failed'],
      ]
      for (const [id, at, state] of createdAt) {
        await platform.context.db.query('UPDATE deliveries SET created_at = $2 WHERE delivery_id = $1', [
          id,
          at,
        ])
        await setState(id, state)
      }

      // The same instants written with a +08:00 offset.
      const reply = await call('POST', `/enterprises/${a.enterpriseId}/deliveries/replay`, {
        from: '2026-02-01T08:00:00+08:00',
        to: '2026-02-02T08:00:00+08:00',
      })
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      assert.deepEqual(reply.body, { enterpriseId: a.enterpriseId, replayed: 3 })

      const states = async (ids: number[]) => Promise.all(ids.map(async (id) => (await stored(id))?.state))
      assert.deepEqual(await states([atFrom, inside, unconfirmed]), ['pending', 'pending', 'pending'])
      assert.deepEqual(await states([acked, pending, atTo, earlier]), [
        'acked',
        'pending',
        'failed',
        'failed',
      ])
      assert.deepEqual(await states(b.ids), ['failed'], 'another enterprise’s deliveries are left alone')

      // Nothing left to replay in that range.
      const again = await call('POST', `/enterprises/${a.enterpriseId}/deliveries/replay`, {
        from: '2026-02-01T00:00:00Z',
        to: '2026-02-02T00:00:00Z',
      })
      assert.deepEqual(again.body, { enterpriseId: a.enterpriseId, replayed: 0 })
    })

    test('a range replay refuses bad bodies (4001 naming the field), unknown enterprises (4040)', async () => {
      const { enterpriseId } = await enterpriseWithDeliveries(0)
      const path = `/enterprises/${enterpriseId}/deliveries/replay`
      const from = '2026-02-01T00:00:00Z'
      const to = '2026-02-02T00:00:00Z'
      await refused('POST', path, 4001, /^from: .*explicit offset/, { from: '2026-02-01T00:00:00', to })
      await refused('POST', path, 4001, /^to: .*explicit offset/, { from, to: '2026-02-30T00:00:00Z' })
      await refused('POST', path, 4001, /^to: /, { from })
      await refused('POST', path, 4001, /^from: /, { to })
      await refused('POST', path, 4001, /^from: /, { from: 1767225600000, to })
      await refused('POST', path, 4001, /^from: must be before to$/, { from: to, to: from })
      await refused('POST', path, 4001, /^from: must be before to$/, {
        from,
        to: '2026-02-01T08:00:00+08:00',
      })
      await refused('POST', path, 4001, /^state: is not a field/, { from, to, state: 'failed' })
      await refused('POST', path, 4000, /JSON object/, [from, to])
      await refused('POST', path, 4000, /JSON object/)
      await refused('POST', '/enterprises/999999/deliveries/replay', 4040, /^no enterprise 999999$/, {
        from,
        to,
      })
      await refused('POST', '/enterprises/x/deliveries/replay', 4001, /^enterpriseId: /, { from, to })
    })

    test('an unreceipted replay pushes again what was created since and never receipted; dryRun only counts', async () => {
      const a = await enterpriseWithDeliveries(10)
      const b = await enterpriseWithDeliveries(1)
      const [
        acked,
        failed,
        unconfirmed,
        atSince,
        confirmed,
        cancelled,
        pending,
        inFlight,
        earlier,
        earlierAcked,
      ] = a.ids as [number, number, number, number, number, number, number, number, number, number]
      const createdAt: [number, string, DeliveryState][] = [
        [acked, '2026-02-01T10:00:00Z', 'acked'],
        [failed, '2026-02-02T10:00:00Z', 'failed'],
        [unconfirmed, '2026-02-03T10:00:00Z', 'unconfirmed'],
        [atSince, '2026-02-01T00:00:00Z', 'acked'],
        [confirmed, '2026-02-01T10:00:00Z', 'confirmed'],
        [cancelled, '2026-02-01T10:00:00Z', 'cancelled'],
        [pending, '2026-02-01T10:00:00Z', 'pending'],
        [inFlight, '2026-02-01T10:00:00Z', 'in_flight'],
        [earlier, '2026-01-31T23:59:59.999Z', 'failed'],
        [earlierAcked, '2026-01-31T23:59:59.999Z', 'acked'],
        [b.ids[0] as number, '2026-02-01T10:00:00Z', 'failed'],
      ]
      for (const [id, at, state] of createdAt) {
        await platform.context.db.query('UPDATE deliveries SET created_at = $2 WHERE delivery_id = $1', [
          id,
          at,
        ])
        await setState(id, state)
      }
      const states = async (ids: number[]) => Promise.all(ids.map(async (id) => (await stored(id))?.state))
      const before = await states(a.ids)
      const path = `/enterprises/${a.enterpriseId}/deliveries/replay-unreceipted`
      // The same instant written with a +08:00 offset, echoed as given.
      const since = '2026-02-01T08:00:00+08:00'

      const dryRun = await call('POST', path, { since, dryRun: true })
      assert.equal(dryRun.status, 200, JSON.stringify(dryRun.body))
      assert.deepEqual(dryRun.body, {
        enterpriseId: a.enterpriseId,
        since,
        replayable: 4,
        alreadyScheduled: 2,
      })
      assert.deepEqual(await states(a.ids), before, 'a dry run moves nothing')

      const reply = await call('POST', path, { since, dryRun: false })
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      assert.deepEqual(reply.body, { enterpriseId: a.enterpriseId, since, replayed: 4, alreadyScheduled: 2 })
      for (const id of [acked, failed, unconfirmed, atSince]) {
        assert.deepEqual(await stored(id), { state: 'pending', due: true, failures: 0, acks: 1 })
      }
      assert.deepEqual(await states([confirmed, cancelled, pending, inFlight, earlier, earlierAcked]), [
        'confirmed',
        'cancelled',
        'pending',
        'in_flight',
        'failed',
        'acked',
      ])
      assert.equal((await stored(pending))?.failures, 15, 'a pending delivery is left as it is')
      assert.deepEqual(await states(b.ids), ['failed'], 'another enterprise’s deliveries are left alone')

      const again = await call('POST', path, { since })
      assert.deepEqual(again.body, { enterpriseId: a.enterpriseId, since, replayed: 0, alreadyScheduled: 6 })
    })

    test('an unreceipted replay refuses bad bodies (4001 naming the field), unknown enterprises (4040)', async () => {
      const { enterpriseId } = await enterpriseWithDeliveries(0)
      const path = `/enterprises/${enterpriseId}/deliveries/replay-unreceipted`
      const since = '2026-02-01T00:00:00Z'
      await refused('POST', path, 4001, /^since: .*explicit offset/, { since: '2026-02-01T00:00:00' })
      await refused('POST', path, 4001, /^since: /, {})
      await refused('POST', path, 4001, /^since: /, { since: 1767225600000, dryRun: true })
      await refused('POST', path, 4001, /^dryRun: must be true or false$/, { since, dryRun: 'yes' })
      await refused('POST', path, 4001, /^from: is not a field/, { since, from: since })
      await refused('POST', path, 4000, /JSON object/, [since])
      await refused('POST', path, 4000, /JSON object/)
      await refused(
        'POST',
        '/enterprises/999999/deliveries/replay-unreceipted',
        4040,
        /^no enterprise 999999$/,
        {
          since,
        },
      )
      await refused('POST', '/enterprises/x/deliveries/replay-unreceipted', 4001, /^enterpriseId: /, {
        since,
      })
    })

    test('every delivery route needs the admin token', async () => {
      const { enterpriseId, ids } = await enterpriseWithDeliveries(1)
      const deliveryId = ids[0] as number
      await setState(deliveryId, 'failed')
      const routes: [string, string, unknown?][] = [
        ['GET', '/deliveries'],
        ['GET', `/deliveries/${deliveryId}`],
        ['POST', `/deliveries/${deliveryId}/replay`],
        [
          'POST',
          `/enterprises/${enterpriseId}/deliveries/replay`,
          { from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' },
        ],
        [
          'POST',
          `/enterprises/${enterpriseId}/deliveries/replay-unreceipted`,
          { since: '2000-01-01T00:00:00Z' },
        ],
      ]
      for (const token of [null, 'not-the-admin-token']) {
        for (const [method, path, body] of routes) {
          const reply = await call(method, path, body, token)
          expectCode(reply, 4010)
        }
      }
      assert.equal((await stored(deliveryId))?.state, 'failed', 'nothing was replayed')
    })
  })
}
