import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  durablePlatforms,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { admin } from '@earshot/test-kit/calls'
import { forgetStaleSignIns } from './access-upkeep.js'
import { mintFirstOwnerToken } from './operator-store.js'

/*
 * Signing in: setup links, password sessions with their CSRF token and lifetimes, the throttle after failed
 * sign-ins, the last owner kept, and the break-glass key off unless set.
 */

const PASSWORD = 'correct horse battery staple'

interface Signed {
  cookie: string
  csrfToken: string
}

async function post(
  platform: TestPlatform,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${platform.adminUrl}/admin/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  const json = (await response.json()) as Record<string, unknown>
  return { status: response.status, body: json, headers: response.headers }
}

async function setUp(platform: TestPlatform, setupUrl: string, email?: string): Promise<Signed> {
  const token = setupUrl.split('#setup=')[1]
  const reply = await post(platform, '/setup', { token, email, name: 'Olive', password: PASSWORD })
  assert.equal(reply.status, 200, JSON.stringify(reply.body))
  return signedFrom(reply)
}

function signedFrom(reply: { body: Record<string, unknown>; headers: Headers }): Signed {
  const cookie = (reply.headers.get('set-cookie') ?? '').split(';')[0] as string
  return { cookie, csrfToken: reply.body.csrfToken as string }
}

async function session(platform: TestPlatform, signed: Signed): Promise<number> {
  const response = await fetch(`${platform.adminUrl}/admin/v1/session`, {
    headers: { cookie: signed.cookie },
  })
  await response.body?.cancel()
  return response.status
}

for (const backend of testBackends) {
  describe(`signing in (${backend})`, { timeout: 120_000 }, () => {
    let now = Date.parse('2026-11-29T12:00:00Z')
    let platform: TestPlatform
    let owner: Signed

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { sessionIdleSeconds: 600, sessionMaxSeconds: 3600 },
        { clock: () => now },
      )
      assert.match(platform.setupUrl ?? '', /\/console\/#setup=[\w-]{43}$/)
      owner = await setUp(platform, platform.setupUrl as string, 'owner@example.com')
    })
    after(() => platform?.stop())

    test('the cookie is HttpOnly and SameSite=Strict; a change without the CSRF token is refused', async () => {
      const reply = await post(platform, '/sign-in', { email: 'OWNER@example.com', password: PASSWORD })
      assert.equal(reply.status, 200)
      assert.match(
        reply.headers.get('set-cookie') ?? '',
        /^earshot_session=[\w-]+; Path=\/; HttpOnly; SameSite=Strict/,
      )
      const signed = signedFrom(reply)
      const refused = await post(platform, '/enterprises', { name: 'Forged' }, { cookie: signed.cookie })
      assert.equal(refused.body.code, 4010)
      assert.match(refused.body.msg as string, /x-csrf-token/)
      const made = await post(
        platform,
        '/enterprises',
        { name: 'Real' },
        { cookie: signed.cookie, 'x-csrf-token': signed.csrfToken },
      )
      assert.equal(made.status, 201)
    })

    test('a setup link works once; the first owner’s is refused once an owner exists', async () => {
      const again = await post(platform, '/setup', {
        token: platform.setupUrl?.split('#setup=')[1],
        password: PASSWORD,
      })
      assert.equal(again.body.code, 4040)
      assert.match(again.body.msg as string, /already used/)
      const fresh = await startTestPlatform(backend)
      try {
        // Two starts before anyone set up: two first-owner links; the second is refused once the first is used.
        const other = await mintFirstOwnerToken(fresh.context.db, Date.now(), randomBytes)
        await setUp(fresh, fresh.setupUrl as string, 'first@example.com')
        const second = await post(fresh, '/setup', {
          token: other,
          email: 'second@example.com',
          password: PASSWORD,
        })
        assert.equal(second.body.code, 4040)
        assert.match(second.body.msg as string, /an owner is already set up/)
        assert.equal(await mintFirstOwnerToken(fresh.context.db, Date.now(), randomBytes), undefined)
      } finally {
        await fresh.stop()
      }
    })

    test('a session ends when idle, and at its absolute lifetime however busy', async () => {
      const signed = signedFrom(
        await post(platform, '/sign-in', { email: 'owner@example.com', password: PASSWORD }),
      )
      now += 599_000
      assert.equal(await session(platform, signed), 200)
      now += 601_000
      assert.equal(await session(platform, signed), 401)

      const busy = signedFrom(
        await post(platform, '/sign-in', { email: 'owner@example.com', password: PASSWORD }),
      )
      for (let step = 0; step < 6; step++) {
        now += 590_000
        assert.equal(await session(platform, busy), 200)
      }
      now += 100_000
      assert.equal(await session(platform, busy), 401)
      owner = signedFrom(await post(platform, '/sign-in', { email: 'owner@example.com', password: PASSWORD }))
    })

    test('failed sign-ins lock the account for a while, the right password included', async () => {
      const added = await admin<{ setupUrl: string }>(platform, 'POST', '/operators', {
        email: 'locked@example.com',
        role: 'viewer',
      })
      await setUp(platform, added.body.setupUrl)
      for (let attempt = 0; attempt < 5; attempt++) {
        const wrong = await post(platform, '/sign-in', {
          email: 'locked@example.com',
          password: 'not the password',
        })
        assert.equal(wrong.body.code, 4010, `attempt ${attempt}`)
      }
      const locked = await post(platform, '/sign-in', { email: 'locked@example.com', password: PASSWORD })
      assert.equal(locked.body.code, 4290)
      assert.equal(locked.headers.get('retry-after'), '30')
      now += 31_000
      assert.equal(
        (await post(platform, '/sign-in', { email: 'locked@example.com', password: PASSWORD })).status,
        200,
      )
      const trail = await admin<{ rows: { operation: string; outcome: string }[] }>(
        platform,
        'GET',
        '/audit?limit=20',
      )
      assert.ok(
        trail.body.rows.filter((row) => row.operation === 'signIn' && row.outcome === 'refused').length >= 5,
      )
    })

    test('the last enabled owner can be neither demoted nor disabled', async () => {
      const [me] = (await platform.context.db.query(
        "SELECT operator_id AS id FROM operators WHERE email = 'owner@example.com'",
      )) as { id: number }[]
      const demoted = await admin(platform, 'PATCH', `/operators/${me?.id}`, { role: 'admin' })
      assert.equal(demoted.status, 400)
      assert.match(JSON.stringify(demoted.body), /no enabled owner/)
      assert.equal((await admin(platform, 'PATCH', `/operators/${me?.id}`, { enabled: false })).status, 400)
      assert.equal(await session(platform, owner), 200)
    })

    test('the janitor forgets ended and outlived sessions and spent setup links, and keeps live ones', async () => {
      const count = async (sql: string) =>
        ((await platform.context.db.query(sql)) as { n: number }[])[0]?.n ?? 0
      const out = await post(
        platform,
        '/sign-out',
        {},
        { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken },
      )
      assert.equal(out.status, 200)
      owner = signedFrom(await post(platform, '/sign-in', { email: 'owner@example.com', password: PASSWORD }))
      assert.ok(
        (await count('SELECT count(*)::int AS n FROM operator_sessions WHERE ended_at IS NOT NULL')) > 0,
      )
      await forgetStaleSignIns(platform.context.db, now + 2 * 86_400_000, 3 * 86_400_000)
      assert.equal(
        await count('SELECT count(*)::int AS n FROM operator_sessions WHERE ended_at IS NOT NULL'),
        0,
      )
      assert.equal(
        await count('SELECT count(*)::int AS n FROM operator_setup_tokens WHERE used_at IS NOT NULL'),
        0,
      )
      assert.equal(await session(platform, owner), 200)
    })

    test('without EARSHOT_ADMIN_TOKEN no bearer token opens the admin API', async () => {
      const bare = await startTestPlatform(backend, { adminToken: undefined })
      try {
        const response = await fetch(`${bare.adminUrl}/admin/v1/enterprises`, {
          headers: { authorization: 'Bearer test-admin-token-0123456789' },
        })
        assert.equal(response.status, 401)
        assert.match(((await response.json()) as { msg: string }).msg, /API key/)
      } finally {
        await bare.stop()
      }
    })
  })
}

for (const backend of testBackends) {
  describe(`a platform moved from the single admin token (${backend})`, { timeout: 120_000 }, () => {
    const storage = durablePlatforms(backend)

    test('the token keeps working as the break-glass key, audited; the setup link is printed until an owner exists', async () => {
      const first = await storage.start()
      assert.equal((await admin(first, 'GET', '/enterprises')).status, 200)
      await first.stop()
      const upgraded = await storage.start()
      assert.ok(upgraded.setupUrl, 'printed again: no owner yet')
      await setUp(upgraded, upgraded.setupUrl as string, 'owner@example.com')
      await upgraded.stop()
      const later = await storage.start()
      assert.equal(later.setupUrl, undefined)
      assert.equal((await admin(later, 'POST', '/enterprises', { name: 'Still works' })).status, 201)
      const trail = await admin<{ rows: { actor: { kind: string }; operation: string }[] }>(
        later,
        'GET',
        '/audit',
      )
      const uses = trail.body.rows.filter((row) => row.actor.kind === 'break-glass')
      // Newest first; this very read is recorded once it has answered.
      assert.deepEqual(
        uses.map((row) => row.operation),
        ['createEnterprise', 'listEnterprises'],
      )
    })
  })
}
