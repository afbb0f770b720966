import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Envelope, type JsonObject, seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  ingest,
  postJson,
  type Reply,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { forgetExpiredNonces } from './replay-guard.js'

/**
 * A sealed request's issuedAt: refused when older than EARSHOT_REQUEST_MAX_AGE or over 60 s ahead (4011),
 * required per enterprise (4001), and its nonce kept only as long as the request could be accepted. The
 * platform's clock is the test's; the test partner of @earshot/test-kit is a client without issuedAt.
 */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'
const CHANGES = '/openapi/v1/audios/changes'
const CALLBACK = '/openapi/v1/callback'
const TOKEN_TTL = 600
const MAX_AGE = 300

let eventCounter = 0
const sealed = (partner: TestPartner, plaintext: JsonObject): Envelope =>
  seal(partner.key, partner.keyVersion, `fresh-${++eventCounter}`, plaintext)
const tokenBody = (partner: TestPartner, envelope: Envelope) => ({
  ...envelope,
  enterpriseId: partner.enterpriseId,
})

async function tokenOf(platform: TestPlatform, partner: TestPartner, plaintext: JsonObject): Promise<string> {
  const reply = await postJson(platform, TOKEN, tokenBody(partner, sealed(partner, plaintext)))
  expectCode(reply, 2000)
  return (reply.body.data as { accessToken: string }).accessToken
}

function expectRefusalOf(reply: Reply, code: number, msg: RegExp): void {
  expectCode(reply, code)
  assert.match(reply.body.msg as string, msg)
}

for (const backend of testBackends) {
  describe(`request freshness: issuedAt (${backend})`, { timeout: 120_000 }, () => {
    let now = Date.parse('2026-11-01T00:00:00Z')
    const seconds = () => Math.floor(now / 1000)
    let platform: TestPlatform

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { tokenTtlSeconds: TOKEN_TTL, requestMaxAgeSeconds: MAX_AGE, pushDispatch: false },
        { clock: () => now },
      )
    })
    after(async () => {
      await platform?.stop()
    })

    /** Past the old token's expiry and its nonces forgotten, as the janitor would. */
    async function laterWithNoncesForgotten(byMs: number): Promise<void> {
      now += byMs
      await forgetExpiredNonces(platform.context.db, now)
    }

    test('a callback replayed with a fresh token is refused when its issuedAt is past the max age', async () => {
      const partner = await createPartner(platform, 'Replayed Callback Co')
      const audioId = await ingest(platform, partner.enterpriseId, {
        audioId: 'fresh-cb-1',
        deviceUid: 'dev-1',
        title: 'a',
        recordedAt: '2026-10-01T08:00:00Z',
        denoiseUrl: 'https://media.example/fresh-cb-1.mp3',
        recordDuration: 1,
      })
      const firstToken = await tokenOf(platform, partner, { issuedAt: seconds() })
      const callback = sealed(partner, { audioId, issuedAt: seconds() })
      const unstamped = sealed(partner, { audioId })
      expectCode(await postJson(platform, CALLBACK, callback, firstToken), 2000)
      expectCode(await postJson(platform, CALLBACK, unstamped, firstToken), 2000)
      expectCode(await postJson(platform, CALLBACK, callback, firstToken), 4090)

      await laterWithNoncesForgotten((TOKEN_TTL + 300 + 1) * 1000)
      const secondToken = await tokenOf(platform, partner, { issuedAt: seconds() })
      const behind = TOKEN_TTL + 300 + 1
      expectRefusalOf(
        await postJson(platform, CALLBACK, callback, secondToken),
        4011,
        new RegExp(`^issuedAt is ${behind} s behind the platform's clock.*check the client's clock`),
      )
      // Without issuedAt the envelope is not tied to a token nor to a time: once its nonce is forgotten,
      // another token of the enterprise gets it accepted (docs/protocol.md says so).
      expectCode(await postJson(platform, CALLBACK, unstamped, secondToken), 2000)
    })

    test('a token request replayed after the max age is refused, its nonce forgotten or not', async () => {
      const partner = await createPartner(platform, 'Replayed Token Co')
      const request = tokenBody(partner, sealed(partner, { issuedAt: seconds() }))
      expectCode(await postJson(platform, TOKEN, request), 2000)
      expectCode(await postJson(platform, TOKEN, request), 4090)
      now += (MAX_AGE + 1) * 1000
      expectRefusalOf(await postJson(platform, TOKEN, request), 4011, /301 s behind/)
      await laterWithNoncesForgotten(60_000)
      expectRefusalOf(await postJson(platform, TOKEN, request), 4011, /361 s behind/)
    })

    test('a client without issuedAt keeps working until its enterprise requires it, then gets 4001', async () => {
      const partner = await createPartner(platform, 'Seed Format Co')
      const audioId = await ingest(platform, partner.enterpriseId, {
        audioId: 'fresh-seed-1',
        deviceUid: 'dev-1',
        title: 'a',
        recordedAt: '2026-10-01T08:00:00Z',
        denoiseUrl: 'https://media.example/fresh-seed-1.mp3',
        recordDuration: 1,
      })
      const token = await partner.token()
      expectCode(await partner.call(AUDIOS, {}, token), 2000)
      expectCode(await partner.call(CHANGES, {}, token), 2000)
      expectCode(await partner.call(CALLBACK, { audioId }, token), 2000)

      const params = { enterpriseId: partner.enterpriseId }
      const updated = await adminCall(platform, 'updateEnterprise', {
        params,
        body: { requireIssuedAt: true },
      })
      assert.equal(updated.requireIssuedAt, true)
      for (const [route, plaintext] of [
        [AUDIOS, {}],
        [CHANGES, {}],
        [CALLBACK, { audioId }],
      ] as const) {
        expectRefusalOf(await partner.call(route, plaintext, token), 4001, /^issuedAt: is required/)
        expectCode(await partner.call(route, { ...plaintext, issuedAt: seconds() }, token), 2000)
      }
      expectRefusalOf(
        await postJson(platform, TOKEN, tokenBody(partner, sealed(partner, {}))),
        4001,
        /^issuedAt: is required/,
      )
      await tokenOf(platform, partner, { issuedAt: seconds() })

      await adminCall(platform, 'updateEnterprise', { params, body: { requireIssuedAt: false } })
      expectCode(await partner.call(AUDIOS, {}, token), 2000)
    })

    test('issuedAt over 60 s ahead is 4011, 60 s ahead is accepted; a malformed one is 4001 naming it', async () => {
      const partner = await createPartner(platform, 'Fast Clock Co')
      const token = await partner.token()
      expectRefusalOf(
        await partner.call(AUDIOS, { issuedAt: seconds() + 61 }, token),
        4011,
        /^issuedAt is 61 s ahead of the platform's clock: check the client's clock$/,
      )
      expectRefusalOf(
        await postJson(platform, TOKEN, tokenBody(partner, sealed(partner, { issuedAt: seconds() + 61 }))),
        4011,
        /61 s ahead/,
      )
      expectCode(await partner.call(AUDIOS, { issuedAt: seconds() + 60 }, token), 2000)
      expectCode(await partner.call(AUDIOS, { issuedAt: seconds() - MAX_AGE }, token), 2000)
      for (const issuedAt of ['1793491200', 1.5, -1, now, null, true]) {
        expectRefusalOf(
          await partner.call(AUDIOS, { issuedAt }, token),
          4001,
          /^issuedAt: must be an integer/,
        )
        expectRefusalOf(
          await postJson(platform, TOKEN, tokenBody(partner, sealed(partner, { issuedAt }))),
          4001,
          /^issuedAt: must be an integer/,
        )
      }
    })

    test("a fresh request's nonce is kept for the max age (plus 60 s), not for its token's lifetime", async () => {
      const { db } = platform.context
      const expiryOf = async (envelope: Envelope) => {
        const [row] = await db.query<{ at: number }>(
          `SELECT extract(epoch FROM expires_at)::float8 AS at FROM replay_nonces WHERE nonce = decode($1, 'base64')`,
          [envelope.nonce],
        )
        return row?.at
      }
      const partner = await createPartner(platform, 'Retention Co')
      const token = await partner.token()
      const issuedAt = seconds()
      const query = sealed(partner, { issuedAt })
      expectCode(await postJson(platform, AUDIOS, query, token), 2000)
      assert.equal(await expiryOf(query), issuedAt + MAX_AGE + 60)
      const unstamped = sealed(partner, {})
      expectCode(await postJson(platform, AUDIOS, unstamped, token), 2000)
      assert.equal(await expiryOf(unstamped), Number(token.split('.')[3]) + 300)

      const tokenRequest = sealed(partner, { issuedAt })
      expectCode(await postJson(platform, TOKEN, tokenBody(partner, tokenRequest)), 2000)
      assert.equal(await expiryOf(tokenRequest), issuedAt + MAX_AGE + 60)
    })
  })
}
