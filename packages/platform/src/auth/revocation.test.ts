import { after, before, describe, test } from 'node:test'
import { type JsonObject, seal } from '@earshot/protocol'
import {
  type ScratchDatabase,
  scratchPostgresDatabase,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import {
  adminCall,
  createPartner,
  expectCode,
  partnerFor,
  postJson,
  type Reply,
  type TestPartner,
} from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'

/**
 * Disabling an enterprise, retiring a key version or rotating a key takes effect on every
 * instance within 1 second. Instances cache credentials (auth/credential-cache.ts); a change made on one
 * reaches the others by NOTIFY, and a key's retirement time is checked on every request.
 */

const TOKEN = '/openapi/v1/token'
const AUDIOS = '/openapi/v1/audios'
let eventCounter = 0

function tokenRequest(
  platform: TestPlatform,
  partner: TestPartner,
  plaintext: JsonObject = {},
): Promise<Reply> {
  const envelope = seal(partner.key, partner.keyVersion, `revocation-${++eventCounter}`, plaintext)
  return postJson(platform, TOKEN, { ...envelope, enterpriseId: partner.enterpriseId })
}

/** Polls `request` (sealed afresh each time) until it answers `code`; returns how long that took. */
async function untilCode(what: string, code: number, request: () => Promise<Reply>): Promise<number> {
  const started = performance.now()
  let last: number | undefined
  await eventually(
    async () => {
      last = (await request()).body.code
      return last === code
    },
    10_000,
    `${what} to answer ${code} (last ${last})`,
  )
  return performance.now() - started
}

if (testBackends.includes('postgres')) {
  describe('revocation across two instances (postgres)', { timeout: 120_000 }, () => {
    let scratch: ScratchDatabase
    let a: TestPlatform
    let b: TestPlatform

    before(async () => {
      scratch = await scratchPostgresDatabase()
      const config = { databaseUrl: scratch.url, keyGraceSeconds: 0, pushDispatch: false }
      a = await startTestPlatform('postgres', config)
      b = await startTestPlatform('postgres', config)
    })
    after(async () => {
      await a?.stop()
      await b?.stop()
      await scratch?.drop()
    })

    test('disabled through one instance: refused by the other', async (t) => {
      const onA = await createPartner(a, 'Disabled Co')
      const onB = partnerFor(b, onA)
      const issued = await onB.token()
      // B has the enterprise's credentials cached.
      expectCode(await onB.call(AUDIOS, {}, issued), 2000)
      expectCode(await tokenRequest(b, onB), 2000)

      await adminCall(a, 'disableEnterprise', { params: { enterpriseId: onA.enterpriseId } })
      const took = await untilCode('a query on the other instance', 4030, () => onB.call(AUDIOS, {}, issued))
      expectCode(await tokenRequest(b, onB), 4030)
      t.diagnostic(`refused on the other instance ${took.toFixed(1)} ms after the admin call returned`)
    })

    test('issuedAt required through one instance: the other refuses a request without it', async (t) => {
      const onA = await createPartner(a, 'Strict Co')
      const onB = partnerFor(b, onA)
      const issued = await onB.token()
      expectCode(await onB.call(AUDIOS, {}, issued), 2000)

      const params = { enterpriseId: onA.enterpriseId }
      await adminCall(a, 'updateEnterprise', { params, body: { requireIssuedAt: true } })
      const took = await untilCode('a query without issuedAt on the other instance', 4001, () =>
        onB.call(AUDIOS, {}, issued),
      )
      expectCode(await tokenRequest(b, onB), 4001)
      expectCode(await onB.call(AUDIOS, { issuedAt: Math.floor(Date.now() / 1000) }, issued), 2000)
      t.diagnostic(`required on the other instance ${took.toFixed(1)} ms after the admin call returned`)
    })

    test('a key rotated (no grace) through one instance: the other takes the new key and refuses the old', async (t) => {
      const onA = await createPartner(a, 'Rotated Co')
      const onB = partnerFor(b, onA)
      const oldToken = await onB.token()
      expectCode(await onB.call(AUDIOS, {}, oldToken), 2000)
      // keyVersion 2 does not exist yet: B caches that too.
      const next = { ...onB, keyVersion: 2 }
      expectCode(await tokenRequest(b, next), 4012)

      const rotated = await adminCall(a, 'rotateKey', { params: { enterpriseId: onA.enterpriseId } })
      const fresh = partnerFor(b, rotated)
      const took = await untilCode('a token request under the new key on the other instance', 2000, () =>
        tokenRequest(b, fresh),
      )
      await untilCode('the old token on the other instance', 4010, () => onB.call(AUDIOS, {}, oldToken))
      expectCode(await tokenRequest(b, onB), 4012)
      const newToken = await fresh.token()
      expectCode(await fresh.call(AUDIOS, {}, newToken), 2000)
      expectCode(await onB.call(AUDIOS, {}, newToken), 4012)
      t.diagnostic(
        `the new key worked on the other instance ${took.toFixed(1)} ms after the rotation returned`,
      )
    })
  })
}

for (const backend of testBackends) {
  describe(`revocation on one instance (${backend})`, { timeout: 120_000 }, () => {
    let now = Date.parse('2026-11-01T00:00:00Z')
    let platform: TestPlatform

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { keyGraceSeconds: 60, pushDispatch: false },
        { clock: () => now },
      )
    })
    after(async () => {
      await platform?.stop()
    })

    test('a change made in the database, not through the admin API, is heard too', async () => {
      const partner = await createPartner(platform, 'Direct Co')
      const issued = await partner.token()
      expectCode(await partner.call(AUDIOS, {}, issued), 2000)
      await platform.context.db.query('UPDATE enterprises SET disabled_at = now() WHERE enterprise_id = $1', [
        partner.enterpriseId,
      ])
      await untilCode('a query', 4030, () => partner.call(AUDIOS, {}, issued))
    })

    test('issuedAt required in the database, not through the admin API, is heard too', async () => {
      const partner = await createPartner(platform, 'Direct Strict Co')
      const issued = await partner.token()
      expectCode(await partner.call(AUDIOS, {}, issued), 2000)
      await platform.context.db.query(
        'UPDATE enterprises SET require_issued_at = true WHERE enterprise_id = $1',
        [partner.enterpriseId],
      )
      await untilCode('a query without issuedAt', 4001, () => partner.call(AUDIOS, {}, issued))
    })

    test('a key stops working the moment its grace ends, with nothing notified', async () => {
      const partner = await createPartner(platform, 'Graced Co')
      const oldToken = await partner.token()
      const rotated = await adminCall(platform, 'rotateKey', {
        params: { enterpriseId: partner.enterpriseId },
      })
      const fresh = partnerFor(platform, rotated)
      const newToken = await fresh.token()

      now += 59_999
      expectCode(await partner.call(AUDIOS, {}, oldToken), 2000)
      expectCode(await tokenRequest(platform, partner), 2000)
      now += 1
      expectCode(await partner.call(AUDIOS, {}, oldToken), 4010)
      expectCode(await fresh.call(AUDIOS, {}, oldToken), 4010)
      expectCode(await tokenRequest(platform, partner), 4012)
      expectCode(await partner.call(AUDIOS, {}, newToken), 4012)
      expectCode(await fresh.call(AUDIOS, {}, newToken), 2000)
    })
  })
}
