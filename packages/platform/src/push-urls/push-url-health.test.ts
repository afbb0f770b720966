import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  ingest,
  type Reply,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import {
  callbackSender,
  type PushAnswer,
  startTestReceiver,
  type TestReceiver,
} from '@earshot/test-kit/test-receiver'
import type { PlatformConfig } from '../config/config.js'
import type { DeliveryView } from '../deliveries/delivery-views.js'
import { type PushUrlView, recordPushUrlOutcomes } from './push-url-health.js'

/** Push URL health: failing, disabled (after a while, or at once on 410), enabled again. */

const DISABLE_AFTER = 2

/** Compressed timings: retries every 0.2 s for 6 s, so a failing URL outlives its 2 s window. */
const settings: Partial<PlatformConfig> = {
  pushRetryScheduleSeconds: Array.from({ length: 30 }, () => 0.2),
  pushConfirmWindowSeconds: 5,
  pushTimeoutSeconds: 0.5,
  pushDisableAfterSeconds: DISABLE_AFTER,
  // One push at a time per URL: held deliveries arrive in the order they are pushed.
  pushConcurrencyPerUrl: 1,
}

const OK: PushAnswer = { status: 200, body: { code: 2000 } }
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

let recordingCounter = 0
const recording = () => ({
  deviceUid: 'DEV-HEALTH',
  title: `health ${++recordingCounter}`,
  recordedAt: '2026-03-01T10:00:00+08:00',
  denoiseUrl: `https://media.example/health-${recordingCounter}.mp3`,
  recordDuration: 1000,
})

for (const backend of testBackends) {
  describe(`${backend}: push URL health`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    const receivers: TestReceiver[] = []
    before(async () => {
      platform = await startTestPlatform(backend, settings)
    })
    after(async () => {
      for (const receiver of receivers) await receiver.close()
      await platform?.stop()
    })

    /** The partner's receiver answering `answer()` (read on every push), calling back after each 2000. */
    async function receiverFor(partner: TestPartner, answer: () => PushAnswer): Promise<TestReceiver> {
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const receiver = await startTestReceiver(partner.secret, {
        answer,
        afterAnswer: (push, answered) => {
          if ((answered.body as { code?: number }).code === 2000) void callback(push.event.audioId)
        },
      })
      receivers.push(receiver)
      return receiver
    }

    async function pushTo(partner: TestPartner, url: string): Promise<void> {
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: url },
      })
    }

    /** A new enterprise pushing to its own receiver. */
    async function endpointFor(answer: () => PushAnswer) {
      const partner = await createPartner(platform)
      const receiver = await receiverFor(partner, answer)
      await pushTo(partner, receiver.url)
      return { enterpriseId: partner.enterpriseId, partner, receiver }
    }

    async function endpoint(url: string): Promise<PushUrlView | undefined> {
      const { pushUrls } = await adminCall(platform, 'listPushUrls')
      return pushUrls.find((each) => each.url === url)
    }
    const inState = async (url: string, state: PushUrlView['state']) => {
      const found = await endpoint(url)
      return found?.state === state && found
    }

    /** The endpoint once a success is recorded (attempts do not wait for their URL's health). */
    const succeeded = async (url: string) => {
      const found = await endpoint(url)
      return found?.lastSuccessAt ? found : undefined
    }

    async function deliveriesOf(enterpriseId: number): Promise<DeliveryView[]> {
      const { deliveries } = await adminCall(platform, 'listDeliveries', { query: { enterpriseId } })
      return deliveries.reverse()
    }
    const allConfirmed = async (enterpriseId: number, count: number) => {
      const deliveries = await deliveriesOf(enterpriseId)
      return deliveries.length === count && deliveries.every((d) => d.state === 'confirmed') && deliveries
    }

    async function claimNumbers(enterpriseId: number): Promise<number[]> {
      const rows = await platform.context.db.query<{ claim_no: number }>(
        'SELECT claim_no FROM deliveries WHERE enterprise_id = $1 ORDER BY delivery_id',
        [enterpriseId],
      )
      return rows.map((row) => row.claim_no)
    }

    /** A delivery of another, healthy push URL made now and confirmed: the dispatcher claimed after now. */
    async function anotherEnterpriseConfirmed(): Promise<void> {
      const { enterpriseId: other } = await endpointFor(() => OK)
      await ingest(platform, other, recording())
      await eventually(() => allConfirmed(other, 1), 15_000, "another URL's delivery confirmed")
    }

    test('410 Gone disables the URL at once for every enterprise on it; its deliveries are held until it is enabled', async () => {
      let answer: PushAnswer = { status: 410, body: { code: 4040, msg: 'gone' } }
      const { enterpriseId: first, receiver } = await endpointFor(() => answer)
      const sharing = await createPartner(platform)
      const second = sharing.enterpriseId
      await pushTo(sharing, receiver.url)

      await ingest(platform, first, recording())
      const disabled = await eventually(() => inState(receiver.url, 'disabled'), 15_000, 'disabled')
      assert.match(disabled.reason ?? '', /^HTTP 410 Gone at \d{4}-\d\d-\d\dT[\d:.]+Z$/)
      assert.match(disabled.disabledAt ?? '', ISO)
      assert.equal(disabled.reason, `HTTP 410 Gone at ${disabled.disabledAt}`)
      assert.deepEqual(disabled.enterprises, [first, second])
      assert.equal(disabled.consecutiveFailures, 1)
      assert.equal(disabled.lastFailureAt, disabled.disabledAt)
      assert.equal(disabled.lastSuccessAt, null)

      // The 410 attempt is recorded, and the delivery is held without spending a retry.
      const [gone] = await eventually(
        async () => {
          const deliveries = await deliveriesOf(first)
          return deliveries[0]?.state === 'held' && deliveries[0].attempts.length === 1 && deliveries
        },
        10_000,
        'the delivery held after its 410',
      )
      assert.ok(gone)
      assert.deepEqual(
        gone.attempts.map((a) => [a.outcome, a.httpStatus]),
        [['gone', 410]],
      )
      const [failures] = await platform.context.db.query<{ failures: number }>(
        'SELECT failures FROM deliveries WHERE delivery_id = $1',
        [gone.deliveryId],
      )
      assert.equal(failures?.failures, 0)

      // New events for the URL accumulate, held and never claimed, while later ones elsewhere go out.
      await ingest(platform, second, recording())
      await ingest(platform, first, recording())
      await anotherEnterpriseConfirmed()
      for (const enterpriseId of [first, second]) {
        const deliveries = await deliveriesOf(enterpriseId)
        assert.ok(
          deliveries.every((d) => d.state === 'held'),
          JSON.stringify(deliveries.map((d) => d.state)),
        )
      }
      assert.deepEqual(await claimNumbers(first), [1, 0], 'only the first was ever claimed')
      assert.deepEqual(await claimNumbers(second), [0])
      assert.equal(receiver.received.length, 1)

      // An enterprise moving to another push URL takes its held deliveries along.
      await pushTo(sharing, (await receiverFor(sharing, () => OK)).url)
      await eventually(() => allConfirmed(second, 1), 15_000, 'pushed to the new URL')
      assert.deepEqual((await endpoint(receiver.url))?.enterprises, [first])

      const metrics = await fetch(`${platform.adminUrl}/metrics`, {
        headers: { authorization: `Bearer ${platform.adminToken}` },
      }).then((response) => response.text())
      assert.match(metrics, /^earshot_push_endpoints\{state="disabled"\} [1-9]\d*$/m)
      assert.ok(
        metrics.includes(`earshot_push_endpoint_state{url="${receiver.url}",state="disabled"} 1\n`),
        metrics,
      )

      answer = OK
      const enabled = { body: await adminCall(platform, 'enablePushUrl', { body: { url: receiver.url } }) }
      assert.equal(enabled.body.url, receiver.url)
      assert.equal(enabled.body.enabled, true)
      assert.equal(enabled.body.resumed, 2)
      assert.equal(enabled.body.replayed, 0)
      assert.equal(enabled.body.endpoint.state, 'healthy')
      assert.equal(enabled.body.endpoint.reason, null)
      assert.equal(enabled.body.endpoint.disabledAt, null)

      const [firstHeld, firstLater] = await eventually(() => allConfirmed(first, 2), 15_000, 'resumed')
      assert.deepEqual(
        firstHeld?.attempts.map((a) => a.outcome),
        ['gone', 'acked'],
      )
      // Pushed again in the order they were due.
      assert.deepEqual(
        receiver.received.slice(1).map((push) => push.event.eventId),
        [firstHeld?.eventId, firstLater?.eventId],
      )
      const healthy = await eventually(() => succeeded(receiver.url), 10_000, 'the success recorded')
      assert.equal(healthy?.state, 'healthy')
      assert.equal(healthy?.consecutiveFailures, 0)
      assert.equal(healthy?.failingSince, null)
    })

    test(`failing for longer than EARSHOT_PUSH_DISABLE_AFTER (${DISABLE_AFTER} s) with no success disables the URL`, async () => {
      let answer: PushAnswer = { status: 503, body: { code: 5030 } }
      const { enterpriseId, receiver } = await endpointFor(() => answer)
      await ingest(platform, enterpriseId, recording())

      const failing = await eventually(() => inState(receiver.url, 'failing'), 10_000, 'failing')
      assert.ok(failing.consecutiveFailures >= 1)
      assert.match(failing.failingSince ?? '', ISO)
      assert.match(failing.reason ?? '', /^\d+ failed attempts? (in a row )?since .+; last: HTTP 503$/)
      assert.equal(failing.disabledAt, null)

      const disabled = await eventually(() => inState(receiver.url, 'disabled'), 15_000, 'disabled')
      assert.equal(
        disabled.reason,
        `failing since ${failing.failingSince} for longer than EARSHOT_PUSH_DISABLE_AFTER (${DISABLE_AFTER} s); last: HTTP 503`,
      )
      assert.equal(disabled.failingSince, failing.failingSince)
      const failedFor = Date.parse(disabled.disabledAt ?? '') - Date.parse(failing.failingSince ?? '')
      assert.ok(failedFor >= DISABLE_AFTER * 1000, `disabled after ${failedFor} ms of failures`)
      assert.ok(disabled.consecutiveFailures >= 2)

      // Held, not failed: its retry schedule (6 s) is not spent.
      const [held] = await eventually(
        async () => {
          const deliveries = await deliveriesOf(enterpriseId)
          return deliveries[0]?.state === 'held' && deliveries
        },
        10_000,
        'the delivery held',
      )
      assert.ok(held)
      const claims = await claimNumbers(enterpriseId)
      // Once its retry is due, a delivery made later elsewhere is claimed and this one is not.
      await eventually(
        async () => {
          const [row] = await platform.context.db.query<{ due: boolean }>(
            'SELECT due_at <= now() AS due FROM deliveries WHERE delivery_id = $1',
            [held.deliveryId],
          )
          return row?.due
        },
        5_000,
        'the held retry due',
      )
      await anotherEnterpriseConfirmed()
      assert.deepEqual(await claimNumbers(enterpriseId), claims)
      const attempts = (await deliveriesOf(enterpriseId))[0]?.attempts.length

      answer = OK
      await adminCall(platform, 'enablePushUrl', { body: { url: receiver.url } })
      const [confirmed] = await eventually(() => allConfirmed(enterpriseId, 1), 15_000, 'confirmed')
      assert.equal(confirmed?.attempts.length, (attempts ?? 0) + 1)
      assert.equal(confirmed?.attempts.at(-1)?.outcome, 'acked')
    })

    test('a success makes a failing URL healthy again', async () => {
      let pushes = 0
      const { enterpriseId, receiver } = await endpointFor(() =>
        ++pushes <= 2 ? { status: 503, body: { code: 5030 } } : OK,
      )
      await ingest(platform, enterpriseId, recording())
      const [delivery] = await eventually(() => allConfirmed(enterpriseId, 1), 15_000, 'confirmed')
      assert.deepEqual(
        delivery?.attempts.map((a) => a.outcome),
        ['failed', 'failed', 'acked'],
      )
      const healthy = await eventually(() => succeeded(receiver.url), 10_000, 'the success recorded')
      assert.deepEqual(
        { ...healthy, lastSuccessAt: undefined, lastFailureAt: undefined },
        {
          url: receiver.url,
          state: 'healthy',
          reason: null,
          failingSince: null,
          lastSuccessAt: undefined,
          lastFailureAt: undefined,
          consecutiveFailures: 0,
          disabledAt: null,
          enterprises: [enterpriseId],
        },
      )
      assert.ok(Date.parse(healthy?.lastFailureAt ?? '') <= Date.parse(healthy?.lastSuccessAt ?? ''))
    })

    test('outcomes: the last of a batch decides; failures add up over batches; a disabled URL stays so', async () => {
      const { db } = platform.context
      const url = 'https://recorded.example/push?token=hidden'
      const at = Date.parse('2026-05-01T00:00:00Z')
      const view = async () => endpoint(url)
      const outcome = (seconds: number, ok: boolean, error = 'HTTP 500') => ({
        url,
        at: at + seconds * 1000,
        ok,
        ...(!ok && { error }),
      })

      assert.deepEqual(
        (await recordPushUrlOutcomes(db, [outcome(2, true), outcome(1, false), outcome(3, false)], 60))
          .disabled,
        [],
      )
      let seen = await view()
      assert.equal(seen?.state, 'failing')
      assert.equal(seen?.consecutiveFailures, 1, 'only the failure after the success')
      assert.equal(seen?.failingSince, '2026-05-01T00:00:03.000Z')
      assert.equal(seen?.lastSuccessAt, '2026-05-01T00:00:02.000Z')
      assert.equal(seen?.reason, '1 failed attempt since 2026-05-01T00:00:03.000Z; last: HTTP 500')
      assert.deepEqual(seen?.enterprises, [])

      await recordPushUrlOutcomes(db, [outcome(30, false, 'HTTP 502')], 60)
      seen = await view()
      assert.equal(seen?.consecutiveFailures, 2)
      assert.equal(seen?.failingSince, '2026-05-01T00:00:03.000Z')
      assert.equal(seen?.reason, '2 failed attempts in a row since 2026-05-01T00:00:03.000Z; last: HTTP 502')

      assert.deepEqual((await recordPushUrlOutcomes(db, [outcome(63, false, 'timeout')], 60)).disabled, [
        {
          url,
          reason:
            'failing since 2026-05-01T00:00:03.000Z for longer than EARSHOT_PUSH_DISABLE_AFTER (60 s); last: timeout',
        },
      ])
      assert.deepEqual(
        await recordPushUrlOutcomes(db, [outcome(64, true)], 60),
        { disabled: [], recovered: [] },
        'disabled once only; a disabled URL does not recover by itself',
      )
      seen = await view()
      assert.equal(seen?.state, 'disabled')
      assert.equal(seen?.disabledAt, '2026-05-01T00:01:03.000Z')
      assert.equal(seen?.lastSuccessAt, '2026-05-01T00:01:04.000Z', 'the success is recorded')
      // Without clearing what the outage began with: enabling replays what went failed since then.
      assert.equal(seen?.consecutiveFailures, 3)
      assert.equal(seen?.failingSince, '2026-05-01T00:00:03.000Z')

      const metrics = await fetch(`${platform.adminUrl}/metrics`, {
        headers: { authorization: `Bearer ${platform.adminToken}` },
      }).then((response) => response.text())
      assert.ok(
        metrics.includes(
          'earshot_push_endpoint_state{url="https://recorded.example/push",state="disabled"} 1\n',
        ),
        'labelled without the query, which may carry a secret',
      )
      assert.ok(!metrics.includes('token=hidden'))

      const enabled = { body: await adminCall(platform, 'enablePushUrl', { body: { url } }) }
      assert.equal(enabled.body.resumed, 0)
      assert.equal(enabled.body.endpoint.state, 'healthy')
      assert.equal(enabled.body.endpoint.consecutiveFailures, 0)

      // A URL's first batch may disable it already: failing for longer than the window, or gone.
      const fresh = (path: string, ...outcomes: { seconds: number; ok: boolean; gone?: boolean }[]) =>
        recordPushUrlOutcomes(
          db,
          outcomes.map((o) => ({
            ...outcome(o.seconds, o.ok),
            url: `https://fresh.example/${path}`,
            gone: o.gone,
          })),
          60,
        )
      assert.deepEqual(
        (await fresh('slow', { seconds: 0, ok: false }, { seconds: 61, ok: false })).disabled.map(
          (d) => d.reason,
        ),
        [
          'failing since 2026-05-01T00:00:00.000Z for longer than EARSHOT_PUSH_DISABLE_AFTER (60 s); last: HTTP 500',
        ],
      )
      assert.deepEqual(
        (await fresh('gone', { seconds: 1, ok: false, gone: true }, { seconds: 2, ok: true })).disabled.map(
          (d) => d.reason,
        ),
        ['HTTP 410 Gone at 2026-05-01T00:00:01.000Z'],
      )
      assert.equal((await endpoint('https://fresh.example/gone'))?.state, 'disabled')
    })

    test('the endpoint routes refuse a bad body (4000, 4001 naming the field) and an unknown URL (4040)', async () => {
      const call = async (body: unknown, contentType = 'application/json'): Promise<Reply> => {
        const response = await fetch(`${platform.adminUrl}/admin/v1/push-urls/enable`, {
          method: 'POST',
          headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': contentType },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        })
        return {
          status: response.status,
          headers: response.headers,
          body: (await response.json()) as Reply['body'],
        }
      }
      const refused = async (body: unknown, code: number, msg: RegExp) => {
        const reply = await call(body)
        expectCode(reply, code)
        assert.match(reply.body.msg as string, msg)
      }
      await refused([], 4000, /JSON object/)
      await refused({}, 4001, /^url: is required/)
      await refused({ url: 42 }, 4001, /^url: /)
      await refused({ url: 'not a url' }, 4001, /^url: /)
      await refused({ url: 'ftp://files.example/push' }, 4001, /^url: /)
      await refused({ url: 'https://x.example/push', force: true }, 4001, /^force: is not a field/)
      await refused({ url: 'https://unknown.example/push' }, 4040, /https:\/\/unknown\.example\/push/)

      // A URL an enterprise uses but no attempt reached yet: healthy, listed, and enabling it is harmless.
      const partner = await createPartner(platform)
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: 'http://127.0.0.1:9/untouched' },
      })
      assert.deepEqual(await endpoint('http://127.0.0.1:9/untouched'), {
        url: 'http://127.0.0.1:9/untouched',
        state: 'healthy',
        reason: null,
        failingSince: null,
        lastSuccessAt: null,
        lastFailureAt: null,
        consecutiveFailures: 0,
        disabledAt: null,
        enterprises: [partner.enterpriseId],
      })
      const enabled = await call({ url: 'HTTP://127.0.0.1:9/untouched' })
      assert.equal(enabled.status, 200, JSON.stringify(enabled.body))
      assert.equal(enabled.body.url, 'http://127.0.0.1:9/untouched', 'compared as push URLs are stored')
      assert.equal(enabled.body.resumed, 0)
    })
  })

  describe(`${backend}: enabling a push URL, or its recovery, replays what failed during its outage`, {
    timeout: 60_000,
  }, () => {
    let platform: TestPlatform
    let receiver: TestReceiver | undefined
    before(async () => {
      // The retry schedule (3 attempts, 0.2 s) runs out well before the URL is disabled (2 s of failures).
      platform = await startTestPlatform(backend, {
        ...settings,
        pushRetryScheduleSeconds: [0.1, 0.1],
      })
    })
    after(async () => {
      await receiver?.close()
      await platform?.stop()
    })

    test('the deliveries that went failed since it began failing are pushed again: when it recovers by itself, and when it is enabled', async () => {
      let answer: PushAnswer = { status: 503, body: { code: 5030 } }
      const partner = await createPartner(platform)
      const callback = callbackSender(() => platform.partnerUrl, partner)
      receiver = await startTestReceiver(partner.secret, {
        answer: () => answer,
        afterAnswer: (push, answered) => {
          if ((answered.body as { code?: number }).code === 2000) void callback(push.event.audioId)
        },
      })
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId: partner.enterpriseId },
        body: { pushUrl: receiver.url },
      })
      const stateOf = async (audioId: string) => {
        const query = { enterpriseId: partner.enterpriseId, audioId }
        const { deliveries } = await adminCall(platform, 'listDeliveries', { query })
        return deliveries[0]?.state
      }
      const inStateNow = (audioId: string, state: string) =>
        eventually(async () => (await stateOf(audioId)) === state, 10_000, `${audioId} ${state}`)
      const store = async (audioId: string) => {
        await ingest(platform, partner.enterpriseId, { ...recording(), audioId })
        return audioId
      }

      // An outage that ended by itself: what failed then is pushed again with its first acknowledged push.
      const before = await store('outage-before')
      await inStateNow(before, 'failed')
      answer = OK
      await inStateNow(await store('healthy-between'), 'confirmed')
      await inStateNow(before, 'confirmed')
      const metrics = await fetch(`${platform.adminUrl}/metrics`, {
        headers: { authorization: `Bearer ${platform.adminToken}` },
      }).then((response) => response.text())
      assert.match(metrics, /^earshot_push_recovered_total [1-9]\d*$/m)

      // The outage that disables the URL.
      answer = { status: 503, body: { code: 5030 } }
      const during = await store('outage-during')
      await inStateNow(during, 'failed')
      await new Promise((resolve) => setTimeout(resolve, DISABLE_AFTER * 1000))
      const held = await store('outage-held')
      await inStateNow(held, 'held')

      answer = OK
      const enabled = await adminCall(platform, 'enablePushUrl', { body: { url: receiver.url } })
      assert.deepEqual([enabled.resumed, enabled.replayed], [1, 1])
      await inStateNow(during, 'confirmed')
      await inStateNow(held, 'confirmed')
    })
  })
}
