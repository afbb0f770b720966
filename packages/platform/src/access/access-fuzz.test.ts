import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { errorCatalogue } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import fc from 'fast-check'

/*
 * What anyone may send the admin listener before signing in: sign-in and setup bodies of any shape,
 * session cookies, CSRF headers and bearer credentials of any value, on the open routes and the guarded
 * ones. Each is answered with a catalogue refusal (never 5000), and the listener goes on serving.
 */

const RUNS = 300

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('', ' ', 'esk_', 'esk_x', '\u0000', 'é🎧', 'a'.repeat(2000), 'owner@example.com'),
)
const json = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record(
    { email: fc.oneof(text, fc.integer()), password: fc.oneof(text, fc.boolean()), token: text, name: text },
    { requiredKeys: [] },
  ),
)
const request = fc.record({
  path: fc.constantFrom(
    '/admin/v1/sign-in',
    '/admin/v1/setup',
    '/admin/v1/session',
    '/admin/v1/sign-out?everywhere=true',
    '/admin/v1/enterprises',
    '/admin/v1/keys',
    '/admin/v1/audit?limit=x',
    '/admin/v1/operators/1',
  ),
  method: fc.constantFrom('GET', 'POST', 'PATCH'),
  body: fc.oneof(
    json.map((value) => JSON.stringify(value)),
    text,
  ),
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8'),
  authorization: fc.option(
    fc.oneof(
      text,
      text.map((value) => `Bearer ${value}`),
    ),
    { nil: undefined },
  ),
  cookie: fc.option(
    fc.oneof(
      text,
      text.map((value) => `earshot_session=${value}`),
    ),
    { nil: undefined },
  ),
  csrf: fc.option(text, { nil: undefined }),
})

const codes = new Set<number>([...errorCatalogue.keys()])

describe('the admin listener before signing in, fuzzed (pglite)', { timeout: 180_000 }, () => {
  let platform: TestPlatform

  before(async () => {
    platform = await startTestPlatform('pglite')
  })
  after(() => platform?.stop())

  test(`${RUNS} requests of any shape: a catalogue refusal each, never 5000`, async () => {
    await fc.assert(
      fc.asyncProperty(request, async (sent) => {
        const headers: Record<string, string> = { 'content-type': sent.contentType }
        const header = (name: string, value: string | undefined) => {
          // Only what HTTP can carry in a header: fetch refuses the rest before sending.
          if (value !== undefined && /^[\t\x20-\x7e]*$/.test(value)) headers[name] = value
        }
        header('authorization', sent.authorization)
        header('cookie', sent.cookie)
        header('x-csrf-token', sent.csrf)
        const response = await fetch(`${platform.adminUrl}${sent.path}`, {
          method: sent.method,
          headers,
          ...(sent.method !== 'GET' && { body: sent.body }),
        })
        const body = (await response.json().catch(() => ({}))) as { code?: number }
        if (response.status >= 400) {
          assert.ok(body.code !== undefined && codes.has(body.code as never), JSON.stringify(body))
          assert.notEqual(body.code, 5000, `${sent.method} ${sent.path}: ${JSON.stringify(body)}`)
        }
        assert.notEqual(response.status, 500)
      }),
      { numRuns: RUNS },
    )
    const health = await fetch(`${platform.adminUrl}/healthz`)
    assert.equal(health.status, 200)
  })
})
