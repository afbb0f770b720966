import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  type ScratchDatabase,
  scratchPostgresDatabase,
  startTestPlatform,
  type TestPlatform,
} from '@earshot/test-kit/backends'
import { admin } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import pg from 'pg'
import type { Queryable } from '../storage/database.js'
import { appendToChain } from './audit-chain.js'
import { verifyAudit } from './audit-trail.js'

/*
 * Two instances on one PostgreSQL database: appends to the audit trail chain in commit order (the chain's
 * head is locked by each append, by hand here), and keys revoked, operators disabled and sessions ended on
 * one instance are refused by the other at its next request.
 */

const entry = (operation: string) => ({
  at: new Date().toISOString(),
  actor: { kind: 'platform' as const, id: 'platform', name: 'test' },
  operation,
  target: {},
  before: null,
  after: null,
  address: null,
  userAgent: null,
  outcome: 'ok' as const,
})

/** A connection of its own, int8 read as a number as the platform reads it. */
async function connection(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  client.setTypeParser(20, 'text', Number)
  await client.connect()
  return client
}

function queryable(client: pg.Client): Queryable {
  return { query: async (sql, params) => (await client.query(sql, params as unknown[])).rows }
}

describe('the audit trail and access across two instances (postgres)', {
  timeout: 120_000,
  skip: !process.env.DATABASE_URL,
}, () => {
  let scratch: ScratchDatabase
  let first: TestPlatform
  let second: TestPlatform

  before(async () => {
    scratch = await scratchPostgresDatabase()
    first = await startTestPlatform('postgres', { databaseUrl: scratch.url })
    second = await startTestPlatform('postgres', { databaseUrl: scratch.url })
  })
  after(async () => {
    await first?.stop()
    await second?.stop()
    await scratch?.drop()
  })

  test('an append waits for the one holding the head, then chains after it', async () => {
    const a = await connection(scratch.url)
    const b = await connection(scratch.url)
    try {
      await a.query('BEGIN')
      const [head] = (await a.query('SELECT head_seq AS seq, head_hash AS hash FROM audit_chain FOR UPDATE'))
        .rows
      await b.query('BEGIN')
      const bPid = (await b.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number
      const waiting = appendToChain(queryable(b), entry('test.second'))
      await eventually(
        async () => {
          const waits = "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'"
          return (await a.query(waits, [bPid])).rows.length === 1
        },
        30_000,
        'the second append waiting on the head',
      )
      const seq = await appendToChain(queryable(a), entry('test.first'))
      assert.equal(seq, head.seq + 1)
      await a.query('COMMIT')
      assert.equal(await waiting, head.seq + 2)
      await b.query('COMMIT')
      assert.deepEqual(await verifyAudit(first.context.db), { ok: true, checked: head.seq + 2 })
    } finally {
      await a.end()
      await b.end()
    }
  })

  test('changes made on both instances at once chain without a gap or a fork', async () => {
    const before = (await first.context.db.query('SELECT count(*)::int AS n FROM audit_log')) as {
      n: number
    }[]
    const made = await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        admin(n % 2 ? first : second, 'POST', '/keys', { name: `key ${n}`, role: 'viewer' }),
      ),
    )
    assert.ok(made.every((reply) => reply.status === 201))
    const verified = await verifyAudit(second.context.db)
    assert.equal(verified.ok, true, JSON.stringify(verified))
    assert.ok(verified.checked >= (before[0]?.n ?? 0) + 40)
  })

  test('a key revoked on one instance is refused by the other at its next request', async () => {
    const created = await admin<{ keyId: number; key: string }>(first, 'POST', '/keys', {
      name: 'cli',
      role: 'viewer',
    })
    const list = (platform: TestPlatform) =>
      fetch(`${platform.adminUrl}/admin/v1/enterprises`, {
        headers: { authorization: `Bearer ${created.body.key}` },
      })
    assert.equal((await list(second)).status, 200)
    assert.equal((await admin(first, 'POST', `/keys/${created.body.keyId}/revoke`)).status, 200)
    const refused = await list(second)
    assert.equal(refused.status, 401)
    assert.match(((await refused.json()) as { msg: string }).msg, /revoked or has expired/)
  })

  test('an operator disabled, or signed out everywhere, on one instance is signed out on the other', async () => {
    const password = 'correct horse battery staple'
    const signInOn = async (platform: TestPlatform) => {
      const response = await fetch(`${platform.adminUrl}/admin/v1/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'moved@example.com', password }),
      })
      const { csrfToken } = (await response.json()) as { csrfToken: string }
      return { cookie: (response.headers.get('set-cookie') ?? '').split(';')[0] as string, csrfToken }
    }
    const sessionOn = async (platform: TestPlatform, cookie: string) =>
      (await fetch(`${platform.adminUrl}/admin/v1/session`, { headers: { cookie } })).status
    const added = await admin<{ operatorId: number; setupUrl: string }>(first, 'POST', '/operators', {
      email: 'moved@example.com',
      role: 'operator',
    })
    const token = added.body.setupUrl.split('#setup=')[1]
    await fetch(`${first.adminUrl}/admin/v1/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, password }),
    })
    const onSecond = await signInOn(second)
    const onFirst = await signInOn(first)
    assert.equal(await sessionOn(second, onSecond.cookie), 200)
    const out = await fetch(`${first.adminUrl}/admin/v1/sign-out?everywhere=true`, {
      method: 'POST',
      headers: { cookie: onFirst.cookie, 'x-csrf-token': onFirst.csrfToken },
    })
    // The setup's session, and the two signed in since.
    assert.deepEqual(await out.json(), { ended: 3 })
    assert.equal(await sessionOn(second, onSecond.cookie), 401)

    const again = await signInOn(second)
    assert.equal(await sessionOn(second, again.cookie), 200)
    assert.equal(
      (await admin(first, 'PATCH', `/operators/${added.body.operatorId}`, { enabled: false })).status,
      200,
    )
    assert.equal(await sessionOn(second, again.cookie), 401)
  })
})
