import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { seal } from '@earshot/protocol'
import { openPostgres } from '@earshot/support/storage'
import {
  type ScratchDatabase,
  scratchPostgresDatabase,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { createPartner, postJson, type TestPartner } from '@earshot/test-kit/calls'
import type { Database } from '../storage/database.js'
import { acceptNonces, forgetExpiredNonces, type NonceUse, nonceGuard } from './replay-guard.js'

/** The replay guard, group-committed (a reused nonce is 4090 on every instance). */

const AUDIOS = '/openapi/v1/audios'
let eventCounter = 0

for (const backend of testBackends) {
  describe(`replay guard (${backend})`, { timeout: 120_000 }, () => {
    let scratch: ScratchDatabase | undefined
    const running: TestPlatform[] = []
    let platform: TestPlatform
    let partner: TestPartner
    let token: string

    before(async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      platform = await startTestPlatform(backend, {
        pushDispatch: false,
        ...(scratch && { databaseUrl: scratch.url }),
      })
      running.push(platform)
      partner = await createPartner(platform, 'Guarded Co')
      token = await partner.token()
    })
    after(async () => {
      for (const each of running) await each.stop()
      await scratch?.drop()
    })

    const use = (nonce = randomBytes(12).toString('base64'), keyVersion = 1): NonceUse => ({
      enterpriseId: partner.enterpriseId,
      keyVersion,
      nonce,
      expiresAtMs: Date.now() + 60_000,
    })

    test('one statement records many; a nonce repeated in it is a replay of its first occurrence', async () => {
      const { db } = platform.context
      const [a, b] = [use(), use()]
      const sameNonceOtherKey = use(a.nonce, 2)
      assert.deepEqual(await acceptNonces(db, [a, { ...a }, b, sameNonceOtherKey, { ...b }]), [
        true,
        false,
        true,
        true,
        false,
      ])
      assert.deepEqual(await acceptNonces(db, [use(), { ...a }]), [true, false], 'a is remembered')
    })

    test('the requests of one turn share one statement, each answered after its row is committed', async () => {
      const { db } = platform.context
      let statements = 0
      const counted: Database = {
        kind: db.kind,
        query: (sql, params) => {
          statements++
          return db.query(sql, params)
        },
        transaction: (fn) => db.transaction(fn),
        session: (fn) => db.session(fn),
        listen: (channel, onNotify) => db.listen(channel, onNotify),
        close: () => db.close(),
      }
      const guard = nonceGuard(counted)
      const uses = Array.from({ length: 20 }, () => use())
      const repeat = { ...(uses[3] as NonceUse) }
      const answers = await Promise.all([...uses, repeat].map((each) => guard(each)))
      assert.equal(statements, 1)
      assert.deepEqual(answers, [...uses.map(() => true), false])

      // Committed before the answer: another connection sees every row at once.
      const reader = scratch ? await openPostgres({ connectionString: scratch.url, max: 1 }) : db
      try {
        const [row] = await reader.query<{ n: number }>(
          `SELECT count(*) AS n FROM replay_nonces WHERE encode(nonce, 'base64') = ANY ($1::text[])`,
          [uses.map((each) => each.nonce)],
        )
        assert.equal(row?.n, uses.length)
      } finally {
        if (reader !== db) await reader.close()
      }
    })

    test('the same envelope sent many times at once: one 2000, every other 4090', async () => {
      const envelope = seal(partner.key, partner.keyVersion, `replay-${++eventCounter}`, {})
      const replies = await Promise.all(
        Array.from({ length: 16 }, () => postJson(platform, AUDIOS, envelope, token)),
      )
      const codes = replies.map((reply) => reply.body.code).sort()
      assert.deepEqual(codes, [2000, ...Array.from({ length: 15 }, () => 4090)])
    })

    test("a bearer request's nonce is kept until its token expires (plus 5 minutes), a token request's for a year", async () => {
      const { db } = platform.context
      const expiryOf = async (envelope: { nonce: string }) => {
        const [row] = await db.query<{ at: number }>(
          `SELECT extract(epoch FROM expires_at)::float8 AS at FROM replay_nonces WHERE nonce = decode($1, 'base64')`,
          [envelope.nonce],
        )
        return row?.at
      }
      const bearer = seal(partner.key, partner.keyVersion, `kept-${++eventCounter}`, {})
      assert.equal((await postJson(platform, AUDIOS, bearer, token)).body.code, 2000)
      const tokenExpiresAt = Number(token.split('.')[3])
      assert.equal(await expiryOf(bearer), tokenExpiresAt + 300)

      const before = Date.now()
      const tokenRequest = { ...seal(partner.key, partner.keyVersion, `kept-${++eventCounter}`, {}) }
      const issued = await postJson(platform, '/openapi/v1/token', {
        ...tokenRequest,
        enterpriseId: partner.enterpriseId,
      })
      assert.equal(issued.body.code, 2000)
      const yearOn = ((await expiryOf(tokenRequest)) ?? 0) * 1000 - before
      assert.ok(Math.abs(yearOn - 365 * 86_400_000) < 60_000, `${yearOn} ms`)
    })

    test('expired nonces are forgotten a batch at a time, oldest first, and only those', async () => {
      const { db } = platform.context
      const now = Date.now()
      const expired = Array.from({ length: 12_000 }, (_, i) => ({ ...use(), expiresAtMs: now - 1000 - i }))
      const live = Array.from({ length: 10 }, () => ({ ...use(), expiresAtMs: now + 60_000 }))
      for (let i = 0; i < expired.length; i += 4000) await acceptNonces(db, expired.slice(i, i + 4000))
      await acceptNonces(db, live)
      assert.ok((await forgetExpiredNonces(db, now)) >= expired.length)
      assert.deepEqual(await acceptNonces(db, [expired[0] as NonceUse]), [true], 'forgotten: accepted again')
      assert.deepEqual(
        await acceptNonces(db, live),
        live.map(() => false),
        'still refused',
      )
    })

    if (backend === 'postgres') {
      test('two instances: the same envelope sent to both at once is accepted by one only', async () => {
        const second = await startTestPlatform(backend, { pushDispatch: false, databaseUrl: scratch?.url })
        running.push(second)
        for (let round = 0; round < 10; round++) {
          const envelope = seal(partner.key, partner.keyVersion, `replay-${++eventCounter}`, {})
          const replies = await Promise.all(
            [platform, second, platform, second].map((each) => postJson(each, AUDIOS, envelope, token)),
          )
          assert.deepEqual(replies.map((reply) => reply.body.code).sort(), [2000, 4090, 4090, 4090])
        }
      })
    }
  })
}
