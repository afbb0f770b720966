import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { admin, ingest } from '@earshot/test-kit/calls'
import { runCli } from '@earshot/test-kit/run-cli'
import { deliveryQueue } from '../push/delivery-store.js'
import { type EndpointView, recordEndpointOutcomes } from '../push/endpoint-health.js'

/** `earshot endpoints list|enable`, the built CLI against a running platform. */

const cli = fileURLToPath(new URL('./earshot.js', import.meta.url))

const HELD = 'http://127.0.0.1:9/held'
const FINE = 'http://127.0.0.1:9/fine'

describe('earshot endpoints against a running platform', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let env: Record<string, string>
  const earshot = (...args: string[]) => runCli(cli, args, env)
  let held: number
  let fine: number

  async function enterprise(pushUrl: string): Promise<number> {
    const { status, body } = await admin<{ enterpriseId: number }>(platform, 'POST', '/enterprises', {
      name: 'CLI Endpoint',
      pushUrl,
    })
    assert.equal(status, 201)
    return body.enterpriseId
  }

  async function listed(): Promise<EndpointView[]> {
    const { status, body } = await admin<{ endpoints: EndpointView[] }>(platform, 'GET', '/endpoints')
    assert.equal(status, 200)
    return body.endpoints
  }

  before(async () => {
    // No dispatcher: health is only what the test records, and the one sweep below holds the deliveries.
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
    held = await enterprise(HELD)
    fine = await enterprise(FINE)
    for (let i = 0; i < 2; i++) {
      await ingest(platform, held, {
        deviceUid: 'dev-endpoints',
        title: `held ${i}`,
        recordedAt: '2026-01-02T03:04:05.000Z',
        denoiseUrl: `https://media.example/held-${i}.mp3`,
        recordDuration: 1000,
      })
    }
    const at = Date.parse('2026-04-01T08:00:00Z')
    await recordEndpointOutcomes(
      platform.context.db,
      [{ url: HELD, at, ok: false, gone: true, error: 'HTTP 410' }],
      60,
    )
    await deliveryQueue.sweep(platform.context.db, 100)
  })

  after(async () => {
    await platform?.stop()
  })

  test('list --json prints the endpoints as the admin API lists them', async () => {
    const result = await earshot('endpoints', 'list', '--json')
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    assert.equal(result.stdout.split('\n').filter(Boolean).length, 1, 'one line on stdout')
    const endpoints = JSON.parse(result.stdout) as EndpointView[]
    assert.deepEqual(endpoints, await listed())
    assert.deepEqual(
      endpoints.map(({ url, state, enterprises }) => ({ url, state, enterprises })),
      [
        { url: FINE, state: 'healthy', enterprises: [fine] },
        { url: HELD, state: 'disabled', enterprises: [held] },
      ],
    )
  })

  test('list without --json is a table, then why each troubled URL is so and how to enable it', async () => {
    const result = await earshot('endpoints', 'list')
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.deepEqual(
      lines.map((line) => line.split(/ {2,}/)),
      [
        ['URL', 'STATE', 'ENTERPRISES', 'FAILURES', 'LAST SUCCESS', 'LAST FAILURE'],
        [FINE, 'healthy', String(fine), '0', '-', '-'],
        [HELD, 'disabled', String(held), '1', '-', '2026-04-01T08:00:00.000Z'],
        [`${HELD} is disabled: HTTP 410 Gone at 2026-04-01T08:00:00.000Z`],
        [
          '',
          `Its deliveries are held, none dropped. Once the partner fixed it: earshot endpoints enable ${HELD}`,
        ],
      ],
    )
  })

  test('enable makes the URL healthy and says how many held deliveries resume; --json prints the answer', async () => {
    const json = await earshot('endpoints', 'enable', HELD, '--json')
    assert.equal(json.code, 0, json.stderr)
    const endpoint = (await listed()).find((each) => each.url === HELD)
    assert.equal(endpoint?.state, 'healthy')
    assert.deepEqual(JSON.parse(json.stdout), { url: HELD, enabled: true, resumed: 2, replayed: 0, endpoint })

    const readable = await earshot('endpoints', 'enable', FINE)
    assert.equal(readable.code, 0, readable.stderr)
    assert.equal(readable.stdout, `Enabled ${FINE}: it is healthy again; it held no deliveries.\n`)
  })

  test('an unknown URL is error 4040 and a malformed one 4001; both exit 1', async () => {
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
