import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, ingest } from '@earshot/test-kit/calls'
import { type CliRun, cleanEnv, runCli } from '@earshot/test-kit/run-cli'
import { deliveryMachine } from '../deliveries/delivery-states.js'
import { DELIVERY_STATES, type DeliveryState } from '../deliveries/delivery-store.js'
import type { DeliveryView } from '../deliveries/delivery-views.js'

/** `earshot deliveries list|show|replay`, the built CLI against a running platform. */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

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

/** util-linux `script`, which runs a command on a pseudo-terminal: how the tests answer a question. */
const hasScript = spawnSync('script', ['--version']).status === 0

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
    const { enterpriseId } = await adminCall(platform, 'createEnterprise', {
      body: { name: 'CLI Pushed', pushUrl: 'http://127.0.0.1:9/push' },
    })
    const audioIds: string[] = []
    for (let i = 0; i < count; i++) audioIds.push(await ingest(platform, enterpriseId, recording()))
    const rows = await platform.context.db.query<{ id: number }>(
      'SELECT delivery_id AS id FROM deliveries WHERE enterprise_id = $1 ORDER BY delivery_id',
      [enterpriseId],
    )
    return { enterpriseId, ids: rows.map((row) => row.id), audioIds }
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
                                      response_code, error, next_attempt_at, claimed_by, answer)
       VALUES ($1, 1, '2026-03-01T01:00:00Z', 12, 'failed', 503, NULL, 'service unavailable', NULL, 'test',
               'try later')`,
      [deliveryId],
    )
  }

  function view(deliveryId: number) {
    return adminCall(platform, 'showDelivery', { params: { deliveryId } })
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
        answer: 'try later',
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
    // With --json, the command line's error is on stdout too (cli-errors.test.ts).
    assert.equal(JSON.parse(bogus.stdout).error.code, 'ERR_EARSHOT_USAGE')
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
        `^error 4001: state: delivery ${acked} is acked; only failed, unconfirmed or queued deliveries can be replayed$`,
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

  /** An enterprise with one delivery in each state given, all created now. */
  async function deliveriesIn(...states: DeliveryState[]): Promise<{ enterpriseId: number; ids: number[] }> {
    const { enterpriseId, ids } = await enterpriseWithDeliveries(states.length)
    for (const [i, state] of states.entries()) await setState(ids[i] as number, state)
    return { enterpriseId, ids }
  }

  const SINCE = '2000-01-01T00:00:00Z'
  const unreceipted = (enterpriseId: number, ...more: string[]) =>
    earshot(
      'deliveries',
      'replay',
      '--enterprise',
      String(enterpriseId),
      '--unreceipted-since',
      SINCE,
      ...more,
    )

  test('replay --unreceipted-since says how many it would replay and, without a terminal, needs --yes', async () => {
    const { enterpriseId, ids } = await deliveriesIn('acked', 'failed', 'unconfirmed', 'confirmed', 'pending')

    const refused = await unreceipted(enterpriseId)
    assert.equal(refused.code, 1)
    assert.equal(refused.stdout, '')
    assert.equal(
      refused.stderr,
      `3 deliveries of enterprise ${enterpriseId} would be replayed, but there is no terminal to confirm on: ` +
        'add --yes to replay them\n',
    )
    assert.deepEqual(await Promise.all(ids.map(stateOf)), [
      'acked',
      'failed',
      'unconfirmed',
      'confirmed',
      'pending',
    ])

    const json = await unreceipted(enterpriseId, '--yes', '--json')
    assert.equal(json.code, 0, json.stderr)
    assert.equal(json.stderr, '')
    assert.deepEqual(JSON.parse(json.stdout), {
      enterpriseId,
      since: SINCE,
      replayed: 3,
      alreadyScheduled: 1,
    })
    assert.deepEqual(await Promise.all(ids.map(stateOf)), [
      'pending',
      'pending',
      'pending',
      'confirmed',
      'pending',
    ])

    const nothing = await unreceipted(enterpriseId)
    assert.equal(nothing.code, 0, nothing.stderr)
    assert.equal(
      nothing.stdout,
      `Enterprise ${enterpriseId} has no deliveries unreceipted since ${SINCE} to replay ` +
        '(4 more are pending or in flight already); nothing replayed.\n',
    )

    const one = await deliveriesIn('acked')
    const readable = await unreceipted(one.enterpriseId, '--yes')
    assert.equal(readable.code, 0, readable.stderr)
    assert.equal(
      readable.stdout,
      `Replayed 1 delivery of enterprise ${one.enterpriseId} unreceipted since ${SINCE}: pending again, due now, ` +
        'with the same eventIds.\n',
    )
  })

  /** Runs the CLI on a pseudo-terminal, answers its question, and returns its exit code and output. */
  async function answering(answer: string, args: string[]): Promise<{ code: number | null; output: string }> {
    const quoted = [process.execPath, cli, ...args].map((arg) => `'${arg.replaceAll("'", "'\\''")}'`)
    const child = spawn('script', ['-qec', quoted.join(' '), '/dev/null'], {
      env: cleanEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let output = ''
    let answered = false
    child.stdout.on('data', (chunk) => {
      output += chunk
      if (!answered && output.includes('[y/N]')) {
        answered = true
        child.stdin.write(`${answer}\n`)
      }
    })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    // Without the terminal's cursor movements (readline redraws the question line).
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences
    return { code, output: output.replace(/\r+\n/g, '\n').replace(/\x1b\[[0-9;]*[A-Za-z]/g, '') }
  }

  test('replay --unreceipted-since asks on a terminal: y replays, anything else replays nothing', {
    skip: !hasScript && 'needs util-linux script for a terminal',
  }, async () => {
    const { enterpriseId, ids } = await deliveriesIn('acked', 'failed')
    const args = ['deliveries', 'replay', '--enterprise', String(enterpriseId), '--unreceipted-since', SINCE]
    const question = `Replay 2 deliveries of enterprise ${enterpriseId} unreceipted since ${SINCE}? [y/N] `

    const declined = await answering('n', args)
    assert.equal(declined.code, 1, declined.output)
    assert.ok(declined.output.startsWith(`${question}n\n`), declined.output)
    assert.match(declined.output, /^Nothing replayed\.$/m)
    assert.deepEqual(await Promise.all(ids.map(stateOf)), ['acked', 'failed'])

    const accepted = await answering('y', args)
    assert.equal(accepted.code, 0, accepted.output)
    assert.ok(accepted.output.startsWith(`${question}y\n`), accepted.output)
    assert.match(
      accepted.output,
      new RegExp(`^Replayed 2 deliveries of enterprise ${enterpriseId} unreceipted`, 'm'),
    )
    assert.deepEqual(await Promise.all(ids.map(stateOf)), ['pending', 'pending'])
  })

  test('replay --unreceipted-since goes with --enterprise only; --yes goes with it', async () => {
    const withId = await earshot(
      'deliveries',
      'replay',
      '1',
      '--unreceipted-since',
      SINCE,
      '--enterprise',
      '1',
    )
    assert.equal(withId.code, 1)
    assert.match(withId.stderr, /^--unreceipted-since goes with --enterprise only \(got a delivery id\)$/m)

    const withRange = await unreceipted(1, '--from', SINCE, '--to', '2001-01-01T00:00:00Z')
    assert.equal(withRange.code, 1)
    assert.match(withRange.stderr, /\(got --from, --to\)$/m)

    const noEnterprise = await earshot('deliveries', 'replay', '--unreceipted-since', SINCE)
    assert.equal(noEnterprise.code, 1)
    assert.match(noEnterprise.stderr, /^--unreceipted-since needs --enterprise ID$/m)

    const yesAlone = await earshot('deliveries', 'replay', '1', '--yes')
    assert.equal(yesAlone.code, 1)
    assert.match(yesAlone.stderr, /^--yes goes with --unreceipted-since$/m)

    const badTime = await earshot(
      'deliveries',
      'replay',
      '--enterprise',
      '1',
      '--unreceipted-since',
      'yesterday',
    )
    assert.equal(badTime.code, 1)
    assert.match(badTime.stderr, /^error 4001: since: /m)

    const unknown = await unreceipted(999999, '--yes', '--json')
    assert.equal(unknown.code, 1)
    assert.equal(JSON.parse(unknown.stdout).error.code, 4040)
  })
})
