import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, adminReply, ingest } from '@earshot/test-kit/calls'
import { type CliRun, runCli } from '@earshot/test-kit/run-cli'
import { startTestReceiver } from '@earshot/test-kit/test-receiver'
import type { NewEndpoint } from '../admin-client/admin-client.js'
import { deliveryQueue } from '../deliveries/delivery-store.js'
import type { EndpointView } from '../endpoints/endpoint-store.js'
import { type PushUrlView, recordPushUrlOutcomes } from '../push-urls/push-url-health.js'

/**
 * `earshot endpoints add|list|show|update|remove` (an enterprise's push endpoints) and `urls|enable` (the
 * health of push URLs), the built CLI against a running platform.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

const HELD = 'http://127.0.0.1:9/held'
const FINE = 'http://127.0.0.1:9/fine'
const ALL_SHORT = 'audio_ready, transcript_ready, deleted, updated'
const GONE_AT = Date.parse('2026-04-01T08:00:00Z')

let recordingCounter = 0

function recording(): Record<string, unknown> {
  const i = ++recordingCounter
  return {
    deviceUid: 'dev-endpoints',
    title: `endpoint recording ${i}`,
    recordedAt: '2026-01-02T03:04:05.000Z',
    denoiseUrl: `https://media.example/endpoint-${i}.mp3`,
    recordDuration: 1000 + i,
  }
}

/** The one line of stdout of a failed --json run, parsed: {"error": {"code", "msg"}}. */
function jsonError(run: CliRun): { code: number | string; msg: string } {
  assert.equal(run.code, 1, run.stderr)
  const lines = run.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  return JSON.parse(lines[0] as string).error
}

/** The columns of a table's lines (two spaces or more apart). */
const columns = (stdout: string) =>
  stdout
    .trimEnd()
    .split('\n')
    .map((line) => line.split(/ {2,}/))

for (const backend of testBackends) {
  describe(`earshot endpoints against a running platform (${backend})`, { timeout: 180_000 }, () => {
    let platform: TestPlatform
    let env: Record<string, string>
    const earshot = (...args: string[]) => runCli(cli, args, env)
    let held: number
    let fine: number

    async function enterprise(pushUrl?: string): Promise<number> {
      const { status, body } = await adminReply(platform, 'createEnterprise', {
        body: { name: 'CLI Endpoint', ...(pushUrl !== undefined && { pushUrl }) },
      })
      assert.equal(status, 201)
      return body.enterpriseId
    }

    async function added(enterpriseId: number, url: string, more: Omit<NewEndpoint, 'url'> = {}) {
      const { status, body } = await adminReply(platform, 'addEndpoint', {
        params: { enterpriseId },
        body: { url, ...more },
      })
      assert.equal(status, 201, JSON.stringify(body))
      return body
    }

    async function endpointsOf(enterpriseId?: number) {
      const { endpoints } =
        enterpriseId === undefined
          ? await adminCall(platform, 'listEndpoints')
          : await adminCall(platform, 'listEnterpriseEndpoints', { params: { enterpriseId } })
      return endpoints
    }

    async function pushUrls() {
      return (await adminCall(platform, 'listPushUrls')).pushUrls
    }

    /** Disables a push URL as a 410 Gone answer would. */
    async function gone(url: string): Promise<void> {
      await recordPushUrlOutcomes(
        platform.context.db,
        [{ url, at: GONE_AT, ok: false, gone: true, error: 'HTTP 410' }],
        60,
      )
    }

    before(async () => {
      // No dispatcher: health is only what the test records, and the one sweep below holds the deliveries.
      platform = await startTestPlatform(backend, { pushDispatch: false })
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      held = await enterprise(HELD)
      fine = await enterprise(FINE)
      for (let i = 0; i < 2; i++) await ingest(platform, held, recording())
      await gone(HELD)
      await deliveryQueue.sweep(platform.context.db, 100)
    })

    after(async () => {
      await platform?.stop()
    })

    // The endpoints `add` adds, which `list` lists.
    const [urlA, urlB] = ['http://127.0.0.1:9/acme-a', 'http://127.0.0.1:9/acme-b']
    let acme: number
    let a: number
    let b: number

    test('add prints the endpoint (--json) or a line, with what differs from the defaults', async () => {
      acme = await enterprise()
      const add = ['endpoints', 'add', urlA, '--enterprise', String(acme)]
      const first = await earshot(
        ...[...add, '--events', 'audio_ready,recording.deleted', '--description', 'the archive'],
        ...['--max-per-second', '5', '--json'],
      )
      assert.equal(first.code, 0, first.stderr)
      assert.equal(first.stderr, '')
      const { endpointId, createdAt, ...rest } = JSON.parse(first.stdout) as EndpointView
      a = endpointId
      assert.ok(Number.isInteger(a) && typeof createdAt === 'string')
      assert.deepEqual(rest, {
        enterpriseId: acme,
        url: urlA,
        eventTypes: ['recording.audio_ready', 'recording.deleted'],
        description: 'the archive',
        enabled: true,
        maxPerSecond: 5,
        health: { state: 'healthy', reason: null, lastSuccessAt: null, lastFailureAt: null },
        waiting: 0,
      })

      const second = await earshot('endpoints', 'add', urlB, '--enterprise', String(acme), '--disabled')
      assert.equal(second.code, 0, second.stderr)
      ;[, b] = (await endpointsOf(acme)).map((endpoint) => endpoint.endpointId) as [number, number]
      assert.equal(
        second.stdout,
        `Added endpoint ${b} of enterprise ${acme}: ${urlB} for ${ALL_SHORT}; disabled; no rate limit.\n`,
      )
    })

    test('list prints the endpoints as JSON, or a table, why each troubled URL is so, and which are disabled', async () => {
      const all = await earshot('endpoints', 'list', '--json')
      assert.equal(all.code, 0, all.stderr)
      assert.equal(all.stdout.split('\n').filter(Boolean).length, 1, 'one line on stdout')
      assert.deepEqual(JSON.parse(all.stdout), await endpointsOf())
      const own = await earshot('endpoints', 'list', '--enterprise', String(acme), '--json')
      assert.deepEqual(JSON.parse(own.stdout), await endpointsOf(acme))
      assert.deepEqual(
        JSON.parse(own.stdout).map((endpoint: EndpointView) => endpoint.endpointId),
        [a, b],
      )

      await gone(urlB)
      const readable = await earshot('endpoints', 'list', '--enterprise', String(acme))
      assert.equal(readable.code, 0, readable.stderr)
      assert.deepEqual(columns(readable.stdout), [
        ['ID', 'ENTERPRISE', 'URL', 'EVENTS', 'STATE', 'HEALTH', 'RATE', 'WAITING'],
        [String(a), String(acme), urlA, 'audio_ready,deleted', 'enabled', 'healthy', '5/s', '0'],
        [String(b), String(acme), urlB, ALL_SHORT.replaceAll(' ', ''), 'disabled', 'disabled', '-', '0'],
        [`${urlB} is disabled: HTTP 410 Gone at 2026-04-01T08:00:00.000Z`],
        [
          '',
          `Its deliveries are held, none dropped. Once the partner fixed it: earshot endpoints enable ${urlB}`,
        ],
        [
          `Endpoint ${b} is disabled: its deliveries, and those of new events, wait. To enable it: earshot endpoints update ${b} --enable (--discard-held to cancel them instead)`,
        ],
      ])

      const empty = await earshot('endpoints', 'list', '--enterprise', String(await enterprise()))
      assert.match(empty.stdout, /^Enterprise \d+ has no endpoints; add one with: earshot endpoints add URL/)
    })

    test('update changes events, rate, URL and state; without --enterprise it finds the enterprise', async () => {
      const acme = await enterprise()
      const { endpointId } = await added(acme, 'http://127.0.0.1:9/update')
      const id = String(endpointId)

      const events = await earshot(
        ...['endpoints', 'update', id, '--events', 'transcript_ready,recording.updated'],
        ...['--max-per-second', '20', '--description', 'transcripts', '--json'],
      )
      assert.equal(events.code, 0, events.stderr)
      const [now] = await endpointsOf(acme)
      assert.deepEqual(JSON.parse(events.stdout), { ...now, discarded: 0 })
      assert.deepEqual(now?.eventTypes, ['recording.transcript_ready', 'recording.updated'])
      assert.equal(now?.maxPerSecond, 20)
      assert.equal(now?.description, 'transcripts')

      const url = 'http://127.0.0.1:9/update-moved'
      const disabled = await runCli(
        cli,
        [
          ...['--url', platform.adminUrl, 'endpoints', 'update', id, '--enterprise', String(acme)],
          ...['--new-url', url, '--max-per-second', 'none', '--disable'],
        ],
        { EARSHOT_ADMIN_TOKEN: platform.adminToken },
      )
      assert.equal(disabled.code, 0, disabled.stderr)
      assert.equal(
        disabled.stdout,
        `Updated endpoint ${id} of enterprise ${acme}: ${url} for transcript_ready, updated; disabled; no rate limit.\n`,
      )
      assert.deepEqual(
        (await endpointsOf(acme)).map(({ url, enabled, maxPerSecond }) => ({ url, enabled, maxPerSecond })),
        [{ url, enabled: false, maxPerSecond: null }],
      )

      const enabled = await earshot('endpoints', 'update', id, '--enable', '--json')
      assert.equal(enabled.code, 0, enabled.stderr)
      assert.equal(JSON.parse(enabled.stdout).enabled, true)
      assert.equal((await endpointsOf(acme))[0]?.enabled, true)

      const elsewhere = await earshot('endpoints', 'update', id, '--enterprise', String(fine), '--enable')
      assert.equal(elsewhere.code, 1)
      assert.match(
        elsewhere.stderr,
        new RegExp(`^error 4040: enterprise ${fine} has no endpoint ${id}: \`earshot endpoints list`),
      )
    })

    test('show prints the endpoint and its recent deliveries with their attempts', async () => {
      const acme = await enterprise()
      const { endpointId } = await added(acme, 'http://127.0.0.1:9/show')
      const audioId = await ingest(platform, acme, recording())
      const [delivery] = await platform.context.db.query<{ id: number }>(
        'SELECT delivery_id AS id FROM deliveries WHERE endpoint_id = $1',
        [endpointId],
      )
      assert.ok(delivery)
      await platform.context.db.query(
        `INSERT INTO delivery_attempts (delivery_id, claim_no, started_at, duration_ms, outcome, http_status,
                                        response_code, error, next_attempt_at, claimed_by)
         VALUES ($1, 1, '2026-03-01T01:00:00Z', 12, 'failed', 503, NULL, 'service unavailable', NULL, 'test')`,
        [delivery.id],
      )

      const json = await earshot('endpoints', 'show', String(endpointId), '--json')
      assert.equal(json.code, 0, json.stderr)
      const shown = await adminCall(platform, 'showEndpoint', { params: { enterpriseId: acme, endpointId } })
      assert.deepEqual(JSON.parse(json.stdout), shown)
      const { endpoint, recentDeliveries } = JSON.parse(json.stdout)
      assert.equal(endpoint.waiting, 1)
      assert.deepEqual(
        recentDeliveries.map((each: { audioId: string; attempts: unknown[] }) => [
          each.audioId,
          each.attempts.length,
        ]),
        [[audioId, 1]],
      )

      const readable = await earshot('endpoints', 'show', String(endpointId), '--enterprise', String(acme))
      assert.equal(readable.code, 0, readable.stderr)
      const lines = columns(readable.stdout)
      assert.deepEqual(lines.slice(0, 3), [
        [`Endpoint ${endpointId} of enterprise ${acme}: enabled, its URL healthy`],
        ['', 'url:', 'http://127.0.0.1:9/show'],
        ['', 'events:', ALL_SHORT],
      ])
      const tableAt = lines.findIndex((line) => line[0] === 'Recent deliveries (1, newest first):')
      assert.ok(tableAt > 0, readable.stdout)
      assert.deepEqual(lines[tableAt + 1]?.slice(0, 6), [
        'ID',
        'ENTERPRISE',
        'AUDIO ID',
        'EVENT',
        'STATE',
        'ATTEMPTS',
      ])
      assert.deepEqual(lines[tableAt + 2]?.slice(0, 7), [
        String(delivery.id),
        String(acme),
        audioId,
        'audio_ready',
        'pending',
        '1',
        'failed: HTTP 503, service unavailable',
      ])
    })

    test('remove cancels the deliveries not yet confirmed; the endpoint is gone from list and show', async () => {
      const acme = await enterprise()
      const { endpointId } = await added(acme, 'http://127.0.0.1:9/remove')
      const { endpointId: idle } = await added(acme, 'http://127.0.0.1:9/remove-idle', {
        eventTypes: ['recording.deleted'],
      })
      for (let i = 0; i < 2; i++) await ingest(platform, acme, recording())
      assert.deepEqual(
        (await endpointsOf(acme)).map((endpoint) => endpoint.waiting),
        [2, 0],
      )

      const json = await earshot('endpoints', 'remove', String(endpointId), '--json')
      assert.equal(json.code, 0, json.stderr)
      assert.equal(json.stdout, `{"removed": ${endpointId}, "cancelled": 2}\n`)
      const [{ cancelled }] = (await platform.context.db.query<{ cancelled: number }>(
        `SELECT count(*)::int AS cancelled FROM deliveries WHERE endpoint_id = $1 AND state = 'cancelled'`,
        [endpointId],
      )) as [{ cancelled: number }]
      assert.equal(cancelled, 2)
      assert.deepEqual(
        (await endpointsOf(acme)).map((endpoint) => endpoint.endpointId),
        [idle],
      )

      const shown = await earshot('endpoints', 'show', String(endpointId), '--json')
      assert.deepEqual(jsonError(shown), {
        code: 4040,
        msg: `no endpoint ${endpointId}: \`earshot endpoints list\` shows the endpoints`,
      })

      const readable = await earshot('endpoints', 'remove', String(idle), '--enterprise', String(acme))
      assert.equal(readable.code, 0, readable.stderr)
      assert.equal(
        readable.stdout,
        `Removed endpoint ${idle} of enterprise ${acme}; it had no deliveries waiting.\n`,
      )
    })

    test('an unknown endpoint id is error 4040 for show, update and remove, which say to list the endpoints', async () => {
      for (const command of [['show'], ['update', '--enable'], ['remove']]) {
        const [name, ...rest] = command as [string, ...string[]]
        const readable = await earshot('endpoints', name, '987654', ...rest)
        assert.equal(readable.code, 1, name)
        assert.equal(readable.stdout, '')
        assert.equal(
          readable.stderr,
          'error 4040: no endpoint 987654: `earshot endpoints list` shows the endpoints\n',
        )
        const json = await earshot('endpoints', name, '987654', ...rest, '--json')
        assert.equal(jsonError(json).code, 4040, name)
      }
    })

    test('an enterprise has at most 10 endpoints: add refuses the 11th with 4001', async () => {
      const acme = await enterprise()
      for (let i = 0; i < 10; i++) await added(acme, `http://127.0.0.1:9/limit-${i}`)
      const args = ['endpoints', 'add', 'http://127.0.0.1:9/limit-10', '--enterprise', String(acme)]
      const readable = await earshot(...args)
      assert.equal(readable.code, 1)
      assert.equal(readable.stdout, '')
      assert.match(
        readable.stderr,
        new RegExp(`^error 4001: url: enterprise ${acme} has 10 endpoints, the most`),
      )
      assert.equal(jsonError(await earshot(...args, '--json')).code, 4001)
      assert.equal((await endpointsOf(acme)).length, 10)
    })

    test('bad --events and --max-per-second are usage errors, and nothing is added or changed', async () => {
      const acme = await enterprise()
      const add = ['endpoints', 'add', 'http://127.0.0.1:9/bad', '--enterprise', String(acme)]
      const bogus = await earshot(...add, '--events', 'audio_ready,bogus', '--json')
      const error = jsonError(bogus)
      assert.equal(error.code, 'ERR_EARSHOT_USAGE')
      assert.ok(error.msg.includes(`unknown event type bogus: give one or more of ${ALL_SHORT}`), error.msg)
      assert.match(bogus.stderr, /^error: option '--events <types>' argument 'audio_ready,bogus' is invalid/)

      const none = await earshot(...add, '--events', ',')
      assert.equal(none.code, 1)
      assert.equal(none.stdout, '')
      assert.match(none.stderr, /no event type given/)

      for (const rate of ['0', 'x', 'none']) {
        const result = await earshot(...add, '--max-per-second', rate)
        assert.equal(result.code, 1, rate)
        assert.match(result.stderr, /the rate is a whole number of deliveries a second, at least 1\n/, rate)
      }
      const tooFast = await earshot(...add, '--max-per-second', '1000000', '--json')
      assert.equal(jsonError(tooFast).code, 4001)
      assert.match(jsonError(tooFast).msg, /^maxPerSecond: must be an integer from 1 to/)
      assert.deepEqual(await endpointsOf(acme), [])

      const original = await added(acme, 'http://127.0.0.1:9/bad')
      const update = ['endpoints', 'update', String(original.endpointId)]
      const rate = await earshot(...update, '--max-per-second', 'fast')
      assert.match(rate.stderr, /at least 1, or none for no limit\n/)
      const both = await earshot(...update, '--enable', '--disable', '--json')
      assert.equal(jsonError(both).code, 'ERR_EARSHOT_USAGE')
      assert.match(jsonError(both).msg, /'--enable' cannot be used with option '--disable'/)
      assert.deepEqual(jsonError(await earshot(...update, '--json')), {
        code: 'ERR_EARSHOT_COMMAND',
        msg: 'nothing to change: give --new-url, --events, --description, --max-per-second, --enable or --disable',
      })
      assert.deepEqual(await endpointsOf(acme), [original])
    })

    test('check reports each item with what came back, and exits 1 when one failed', async () => {
      const checked = await adminCall(platform, 'createEnterprise', { body: { name: 'CLI Check' } })
      // Opens and acknowledges what it can, remembers no nonce, and never calls back.
      const receiver = await startTestReceiver(checked.secret)
      try {
        const args = ['endpoints', 'check', receiver.url, '--enterprise', String(checked.enterpriseId)]
        const run = await earshot(...args, '--callback-within', '1')
        assert.equal(run.code, 1, run.stderr)
        assert.match(run.stderr, /^Checking http:\/\/127\.0\.0\.1:\d+\/earshot\/push for enterprise \d+/)
        assert.match(run.stdout, /^PASS {2}valid-push: a valid push is acknowledged/m)
        assert.match(run.stdout, /^PASS {2}tampered-tag: /m)
        assert.match(run.stdout, /^WARN {2}replayed-envelope: /m)
        assert.match(run.stdout, /^FAIL {2}callbacks: .*\n {6}check_\w+_valid: no callback within 1 s/m)
        assert.match(run.stdout, /failed 1 of the check's items: callbacks\.\n$/)

        const json = await earshot(...args, '--callback-within', '1', '--json')
        assert.equal(json.code, 1, json.stderr)
        const report = JSON.parse(json.stdout)
        assert.equal(report.passed, false)
        assert.equal(report.items.length, 9)
        const refused = jsonError(await earshot(...args, '--callback-within', '61', '--json'))
        assert.equal(refused.code, 4001)
        assert.match(refused.msg, /^callbackWithinSeconds: must be an integer from 1 to 60/)
      } finally {
        await receiver.close()
      }
    })

    test('urls lists every push URL with its health, as JSON or as a table with why and how to enable', async () => {
      const json = await earshot('endpoints', 'urls', '--json')
      assert.equal(json.code, 0, json.stderr)
      assert.equal(json.stdout.split('\n').filter(Boolean).length, 1, 'one line on stdout')
      const listed = JSON.parse(json.stdout) as PushUrlView[]
      assert.deepEqual(listed, await pushUrls())
      assert.deepEqual(
        listed
          .filter(({ url }) => url === HELD || url === FINE)
          .map(({ url, state, enterprises }) => ({ url, state, enterprises })),
        [
          { url: FINE, state: 'healthy', enterprises: [fine] },
          { url: HELD, state: 'disabled', enterprises: [held] },
        ],
      )

      const readable = await earshot('endpoints', 'urls')
      assert.equal(readable.code, 0, readable.stderr)
      const lines = columns(readable.stdout)
      assert.deepEqual(lines[0], ['URL', 'STATE', 'ENTERPRISES', 'FAILURES', 'LAST SUCCESS', 'LAST FAILURE'])
      assert.deepEqual(
        lines.filter((line) => line[0] === FINE || line[0] === HELD),
        [
          [FINE, 'healthy', String(fine), '0', '-', '-'],
          [HELD, 'disabled', String(held), '1', '-', '2026-04-01T08:00:00.000Z'],
        ],
      )
      const why = lines.findIndex(
        (line) => line[0] === `${HELD} is disabled: HTTP 410 Gone at 2026-04-01T08:00:00.000Z`,
      )
      assert.deepEqual(lines[why + 1], [
        '',
        `Its deliveries are held, none dropped. Once the partner fixed it: earshot endpoints enable ${HELD}`,
      ])
    })

    test('enable makes the URL healthy and says how many held deliveries resume; --json prints the answer', async () => {
      const json = await earshot('endpoints', 'enable', HELD, '--json')
      assert.equal(json.code, 0, json.stderr)
      const endpoint = (await pushUrls()).find((each) => each.url === HELD)
      assert.equal(endpoint?.state, 'healthy')
      assert.deepEqual(JSON.parse(json.stdout), {
        url: HELD,
        enabled: true,
        resumed: 2,
        replayed: 0,
        endpoint,
      })

      const readable = await earshot('endpoints', 'enable', FINE)
      assert.equal(readable.code, 0, readable.stderr)
      assert.equal(readable.stdout, `Enabled ${FINE}: it is healthy again; it held no deliveries.\n`)
    })

    test('enable: an unknown URL is error 4040 and a malformed one 4001; both exit 1', async () => {
      const unknown = await earshot('endpoints', 'enable', 'https://nobody.example/push', '--json')
      assert.equal(unknown.code, 1)
      assert.match(unknown.stderr, /^error 4040: no enterprise pushes to https:\/\/nobody\.example\/push/m)
      assert.equal(JSON.parse(unknown.stdout).error.code, 4040)

      const malformed = await earshot('endpoints', 'enable', 'not a url')
      assert.equal(malformed.code, 1)
      assert.match(malformed.stderr, /^error 4001: url: /m)
      assert.equal(malformed.stdout, '')
    })
  })
}
