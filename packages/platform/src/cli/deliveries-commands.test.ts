import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { admin, ingest } from '@earshot/test-kit/calls'
import { type CliRun, runCli } from '@earshot/test-kit/run-cli'
import { deliveryMachine } from '../push/delivery-states.js'
import { DELIVERY_STATES, type DeliveryState, type DeliveryView } from '../push/delivery-store.js'

/** `earshot deliveries list|show|replay` (DESIGN.md §7), the built CLI against a running platform. */

const cli = fileURLToPath(new URL('./earshot.js', import.meta.url))

let recordingCounter = 0

function recording(): Record<string, unknown> {
  const i = ++recordingCounter
  return {
    deviceUid: 'dev-cli',
    title: `Recording ${i}`,
    recordedAt: '2026-01-02T03:04:05.000Z',
    denoiseUrl: `https://media.example/${i}.mp3`,
    recordDuration: 1000 + i,
  }
}

/** The delivery ids a `deliveries list --json` printed, in its order. */
function deliveryIdsOf(result: CliRun): number[] {
  return JSON.parse(result.stdout).map((each: { deliveryId: number }) => each.deliveryId)
}

describe('earshot deliveries against a running platform', { timeout: 180_000 }, () => {
  let platform: TestPlatform
  let env: Record<string, string>
  const earshot = (...args: string[]) => runCli(cli, args, env)

  /** An enterprise with a push URL and `count` recordings: one pending delivery each, oldest first. */
  async function enterpriseWithDeliveries(
    count: number,
  ): Promise<{ enterpriseId: number; ids: number[]; audioIds: string[] }> {
    const { body } = await admin<{ enterpriseId: number }>(platform, 'POST', '/enterprises', {
      name: 'CLI Pushed',
      pushUrl: 'http://127.0.0.1:9/push',
    })
    const audioIds: string[] = []
    for (let i = 0; i < count; i++) audioIds.push(await ingest(platform, body.enterpriseId, recording()))
    const rows = await platform.context.db.query<{ id: number }>(
      'SELECT delivery_id AS id FROM deliveries WHERE enterprise_id = $1 ORDER BY delivery_id',
      [body.enterpriseId],
    )
    return { enterpriseId: body.enterpriseId, ids: rows.map((row) => row.id), audioIds }
  }

  /** Moves a pending delivery to a state along the transitions the dispatcher would take. */
  async function setState(deliveryId: number, state: DeliveryState): Promise<void> {
    for (const step of deliveryMachine.path('pending', state) ?? []) {
      const dueAt =
        step === 'acked'
          ? "now() + interval '10 minutes'"
          : deliveryMachine.final.includes(step)
            ? 'NULL'
            : 'now()'
      await platform.context.db.query(
        `UPDATE deliveries SET state = $2, due_at = ${dueAt} WHERE delivery_id = $1`,
        [deliveryId, step],
      )
    }
  }

  async function stateOf(deliveryId: number): Promise<string | undefined> {
    const [row] = await platform.context.db.query<{ state: string }>(
      'SELECT state FROM deliveries WHERE delivery_id = $1',
      [deliveryId],
    )
    return row?.state
  }

  async function failedAttempt(deliveryId: number): Promise<void> {
    await platform.context.db.query(
      `INSERT INTO delivery_attempts (delivery_id, claim_no, started_at, duration_ms, outcome, http_status,
                                      response_code, error, next_attempt_at, claimed_by)
       VALUES ($1, 1, '2026-03-01T01:00:00Z', 12, 'failed', 503, NULL, 'service unavailable', NULL, 'test')`,
      [deliveryId],
    )
  }

  async function view(deliveryId: number): Promise<DeliveryView> {
    const { status, body } = await admin<DeliveryView>(platform, 'GET', `/deliveries/${deliveryId}`)
    assert.equal(status, 200)
    return body
  }

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
  })

  after(async () => {
    await platform?.stop()
  })

  test('list --json prints exactly deliveryId, audioId, eventId, eventType, state and attempts', async () => {
    const { enterpriseId, ids, audioIds } = await enterpriseWithDeliveries(2)
    const [older, newer] = ids as [number, number]
    await failedAttempt(older)
    await setState(older, 'failed')

    const list = ['deliveries', 'list', '--enterprise', String(enterpriseId)]
    const result = await earshot(...list, '--json')
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    assert.equal(result.stdout.split('\n').filter(Boolean).length, 1, 'one line on stdout')
    const listed = JSON.parse(result.stdout)
    assert.ok(Array.isArray(listed))
    for (const each of listed) {
      assert.deepEqual(Object.keys(each), [
        'deliveryId',
        'audioId',
        'eventId',
        'eventType',
        'state',
        'attempts',
      ])
    }
    const full = [await view(newer), await view(older)]
    assert.deepEqual(
      listed,
      full.map(({ deliveryId, audioId, eventId, eventType, state, attempts }) => ({
        deliveryId,
        audioId,
        eventId,
        eventType,
        state,
        attempts,
      })),
    )
    assert.deepEqual(
      listed.map((each: { audioId: string }) => each.audioId),
      [...audioIds].reverse(),
    )
    const [first, second] = listed as [DeliveryView, DeliveryView]
    assert.equal(second.state, 'failed')
    assert.deepEqual(second.attempts, [
      {
        attemptNo: 1,
        startedAt: '2026-03-01T01:00:00.000Z',
        durationMs: 12,
        outcome: 'failed',
        httpStatus: 503,
        responseCode: null,
        error: 'service unavailable',
        nextAttemptAt: null,
      },
    ])
    assert.equal(first.eventType, 'recording.audio_ready')
    assert.deepEqual(first.attempts, [])

    const failed = await earshot(...list, '--state', 'failed', '--json')
    assert.equal(failed.code, 0, failed.stderr)
    assert.deepEqual(deliveryIdsOf(failed), [older])
    const byAudio = await earshot('deliveries', 'list', '--audio-id', audioIds[1] as string, '--json')
    assert.equal(byAudio.code, 0, byAudio.stderr)
    assert.deepEqual(deliveryIdsOf(byAudio), [newer])
    const limited = await earshot(...list, '--limit', '1', '--json')
    assert.deepEqual(deliveryIdsOf(limited), [newer])
    const nextPage = await earshot(...list, '--before', String(newer), '--json')
    assert.deepEqual(deliveryIdsOf(nextPage), [older])
  })

  test('list without --json is a table with the last attempt and when the next is due', async () => {
    const { enterpriseId, ids, audioIds } = await enterpriseWithDeliveries(2)
    const [older, newer] = ids as [number, number]
    await failedAttempt(older)
    await setState(older, 'failed')

    const result = await earshot('deliveries', 'list', '--enterprise', String(enterpriseId))
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.match(
      lines[0] as string,
      /^ID +ENTERPRISE +AUDIO ID +EVENT +STATE +ATTEMPTS +LAST ATTEMPT +NEXT ATTEMPT$/,
    )
    assert.match(
      lines[1] as string,
      new RegExp(
        `^${newer} +${enterpriseId} +${audioIds[1]} +audio_ready +pending +0 +- +\\d{4}-\\d\\d-\\d\\dT\\S+Z$`,
      ),
    )
    assert.match(
      lines[2] as string,
      new RegExp(
        `^${older} +${enterpriseId} +${audioIds[0]} +audio_ready +failed +1 +failed: HTTP 503, service unavailable +-$`,
      ),
    )
    assert.equal(lines.length, 3)

    const none = await earshot('deliveries', 'list', '--enterprise', '999999')
    assert.equal(none.code, 0, none.stderr)
    assert.equal(none.stdout, 'No deliveries match.\n')
  })

  test('a bad --state, --limit or --enterprise is refused before calling the platform', async () => {
    const bogus = await earshot('deliveries', 'list', '--state', 'bogus', '--json')
    assert.equal(bogus.code, 1)
    assert.equal(bogus.stdout, '')
    assert.match(bogus.stderr, /'bogus' is invalid/)
    assert.ok(bogus.stderr.includes(DELIVERY_STATES.join(', ')), bogus.stderr)

    for (const limit of ['0', '1001', 'x']) {
      const result = await earshot('deliveries', 'list', '--limit', limit)
      assert.equal(result.code, 1)
      assert.match(result.stderr, /limit is an integer from 1 to 1000/)
    }
    const enterprise = await earshot('deliveries', 'list', '--enterprise', 'acme')
    assert.equal(enterprise.code, 1)
    assert.match(enterprise.stderr, /enterprise id is a positive integer/)
  })

  test('show prints the delivery and its attempts; an unknown one is error 4040', async () => {
    const { ids, audioIds } = await enterpriseWithDeliveries(1)
    const deliveryId = ids[0] as number
    await failedAttempt(deliveryId)
    await setState(deliveryId, 'failed')

    const json = await earshot('deliveries', 'show', String(deliveryId), '--json')
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual(JSON.parse(json.stdout), await view(deliveryId))

    const readable = await earshot('deliveries', 'show', String(deliveryId))
    assert.equal(readable.code, 0, readable.stderr)
    assert.match(readable.stdout, new RegExp(`^Delivery ${deliveryId}: failed$`, 'm'))
    assert.match(readable.stdout, new RegExp(`^ +audioId: +${audioIds[0]}$`, 'm'))
    assert.match(readable.stdout, /^Attempts \(1\):$/m)
    assert.match(readable.stdout, /^# +STARTED +DURATION +OUTCOME +HTTP +CODE +NEXT ATTEMPT +ERROR$/m)
    assert.match(
      readable.stdout,
      /^1 +2026-03-01T01:00:00\.000Z +12 ms +failed +503 +- +- +service unavailable$/m,
    )
    assert.match(readable.stdout, new RegExp(`earshot deliveries replay ${deliveryId}$`, 'm'))

    const missing = await earshot('deliveries', 'show', '999999', '--json')
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^error 4040: no delivery 999999$/m)
    assert.equal(JSON.parse(missing.stdout).error.code, 4040)
  })

  test('replay <deliveryId> puts a failed delivery back to pending; an acked one is error 4001', async () => {
    const { ids } = await enterpriseWithDeliveries(3)
    const [failed, acked, another] = ids as [number, number, number]
    await setState(failed, 'failed')
    await setState(acked, 'acked')
    await setState(another, 'unconfirmed')

    const json = await earshot('deliveries', 'replay', String(failed), '--json')
    assert.equal(json.code, 0, json.stderr)
    assert.equal(json.stdout, '{"replayed": 1}\n')
    assert.equal(await stateOf(failed), 'pending')

    const readable = await earshot('deliveries', 'replay', String(another))
    assert.equal(readable.code, 0, readable.stderr)
    assert.match(readable.stdout, new RegExp(`^Replayed delivery ${another}: it is pending again`))
    assert.equal(await stateOf(another), 'pending')

    const refused = await earshot('deliveries', 'replay', String(acked))
    assert.equal(refused.code, 1)
    assert.equal(refused.stdout, '')
    assert.match(
      refused.stderr,
      new RegExp(
        `^error 4001: state: delivery ${acked} is acked; only failed or unconfirmed deliveries can be replayed$`,
        'm',
      ),
    )
    assert.equal(await stateOf(acked), 'acked')
  })

  test('replay --enterprise --from --to replays the range and prints {"replayed": N}', async () => {
    const { enterpriseId, ids } = await enterpriseWithDeliveries(4)
    const [inRange, unconfirmed, acked, outOfRange] = ids as [number, number, number, number]
    const created: [number, string, DeliveryState][] = [
      [inRange, '2026-02-01T10:00:00Z', 'failed'],
      [unconfirmed, '2026-02-01T11:00:00Z', 'unconfirmed'],
      [acked, '2026-02-01T12:00:00Z', 'acked'],
      [outOfRange, '2026-02-03T00:00:00Z', 'failed'],
    ]
    for (const [id, at, state] of created) {
      await platform.context.db.query('UPDATE deliveries SET created_at = $2 WHERE delivery_id = $1', [
        id,
        at,
      ])
      await setState(id, state)
    }
    const range = ['--enterprise', String(enterpriseId), '--from', '2026-02-01T00:00:00Z', '--to']
    const json = await earshot('deliveries', 'replay', ...range, '2026-02-02T00:00:00+00:00', '--json')
    assert.equal(json.code, 0, json.stderr)
    assert.equal(json.stdout, '{"replayed": 2}\n')
    assert.deepEqual(await Promise.all(ids.map(stateOf)), ['pending', 'pending', 'acked', 'failed'])

    const readable = await earshot('deliveries', 'replay', ...range, '2026-02-04T00:00:00Z')
    assert.equal(readable.code, 0, readable.stderr)
    assert.match(
      readable.stdout,
      new RegExp(`^Replayed 1 failed or unconfirmed delivery of enterprise ${enterpriseId}`),
    )

    const nothing = await earshot('deliveries', 'replay', ...range, '2026-02-04T00:00:00Z')
    assert.equal(nothing.code, 0, nothing.stderr)
    assert.match(nothing.stdout, /nothing replayed/)

    const badTime = await earshot('deliveries', 'replay', ...range, '2026-02-04 00:00', '--json')
    assert.equal(badTime.code, 1)
    assert.match(badTime.stderr, /^error 4001: to: /m)
  })

  test('replay takes exactly one form: a delivery id, or --enterprise with --from and --to', async () => {
    const both = await earshot('deliveries', 'replay', '1', '--enterprise', '1')
    assert.equal(both.code, 1)
    assert.equal(both.stdout, '')
    assert.match(both.stderr, /either a delivery id or --enterprise with --from and --to, not both/)

    const neither = await earshot('deliveries', 'replay')
    assert.equal(neither.code, 1)
    assert.match(neither.stderr, /missing --enterprise, --from, --to/)

    const partial = await earshot(
      'deliveries',
      'replay',
      '--enterprise',
      '1',
      '--from',
      '2026-01-01T00:00:00Z',
    )
    assert.equal(partial.code, 1)
    assert.match(partial.stderr, /missing --to\)/)

    const badId = await earshot('deliveries', 'replay', 'seven')
    assert.equal(badId.code, 1)
    assert.match(badId.stderr, /delivery id is a positive integer/)
  })
})
