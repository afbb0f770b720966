import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin } from '@earshot/test-kit/calls'
import { appendAudit, pruneAuditTrail, verifyAudit } from './audit-trail.js'

/*
 * The audit trail: append-only against the platform's own database user, hash-chained so that a row
 * changed or removed behind the platform's back is found, pruned only to an anchor that verify starts
 * from, and never holding a secret.
 */

const row = (operation: string, at = new Date().toISOString()) => ({
  at,
  actor: { kind: 'platform' as const, id: 'platform', name: 'test' },
  operation,
  target: {},
  before: null,
  after: null,
  address: null,
  userAgent: null,
  outcome: 'ok' as const,
})

for (const backend of testBackends) {
  describe(`the audit trail (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    const query = (sql: string, params?: unknown[]) => platform.context.db.query(sql, params)
    /** Runs a statement as a tamperer with database access would: the append-only trigger off. */
    const tamper = async (sql: string) => {
      await query('ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only')
      try {
        await query(sql)
      } finally {
        await query('ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only')
      }
    }

    before(async () => {
      platform = await startTestPlatform(backend)
    })
    after(() => platform?.stop())

    test('rows cannot be updated, deleted or truncated, by the platform itself', async () => {
      await appendAudit(platform.context.db, row('test.append'))
      await assert.rejects(query("UPDATE audit_log SET operation = 'x'"), /append-only: UPDATE refused/)
      await assert.rejects(query('DELETE FROM audit_log'), /append-only: DELETE refused/)
      await assert.rejects(query('TRUNCATE audit_log'), /append-only: TRUNCATE refused/)
    })

    test('verify finds a row changed, a row removed, and the last row removed', async () => {
      for (let n = 0; n < 5; n++) await appendAudit(platform.context.db, row(`test.row${n}`))
      const good = await verifyAudit(platform.context.db)
      assert.equal(good.ok, true, JSON.stringify(good))
      const [{ seq } = { seq: 0 }] = (await query(
        "SELECT seq FROM audit_log WHERE operation = 'test.row2'",
      )) as { seq: number }[]

      await tamper(`UPDATE audit_log SET after = '{"changed":true}' WHERE seq = ${seq}`)
      assert.deepEqual(await verifyAudit(platform.context.db), { ok: false, checked: seq - 1, firstBad: seq })
      await tamper(`UPDATE audit_log SET after = NULL WHERE seq = ${seq}`)
      assert.equal((await verifyAudit(platform.context.db)).ok, true)

      await tamper(`DELETE FROM audit_log WHERE seq = ${seq}`)
      assert.deepEqual(await verifyAudit(platform.context.db), { ok: false, checked: seq - 1, firstBad: seq })
    })

    test('the last row removed is found by the head the chain keeps', async () => {
      const fresh = await startTestPlatform(backend)
      try {
        for (let n = 0; n < 3; n++) await appendAudit(fresh.context.db, row(`test.tail${n}`))
        await fresh.context.db.query('ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only')
        await fresh.context.db.query('DELETE FROM audit_log WHERE seq = (SELECT max(seq) FROM audit_log)')
        assert.deepEqual(await verifyAudit(fresh.context.db), { ok: false, checked: 2, firstBad: 3 })
      } finally {
        await fresh.stop()
      }
    })

    test('pruning keeps an anchor: the rest still verifies, and the pruning is a row', async () => {
      const fresh = await startTestPlatform(backend)
      try {
        const old = new Date(Date.now() - 500 * 86_400_000).toISOString()
        for (let n = 0; n < 3; n++) await appendAudit(fresh.context.db, row(`test.old${n}`, old))
        await appendAudit(fresh.context.db, row('test.recent'))
        assert.equal(await pruneAuditTrail(fresh.context.db, Date.now, 400), 3)
        const rows = (await fresh.context.db.query('SELECT operation FROM audit_log ORDER BY seq')) as {
          operation: string
        }[]
        assert.deepEqual(
          rows.map((kept) => kept.operation),
          ['test.recent', 'audit.prune'],
        )
        assert.deepEqual(await verifyAudit(fresh.context.db), { ok: true, checked: 2 })
      } finally {
        await fresh.stop()
      }
    })

    test('a refused change leaves no row; secrets and passwords never enter the trail', async () => {
      const created = await admin<{ enterpriseId: number; secret: string }>(
        platform,
        'POST',
        '/enterprises',
        {
          name: 'Secretive',
        },
      )
      const rotated = await admin<{ secret: string }>(
        platform,
        'POST',
        `/enterprises/${created.body.enterpriseId}/rotate-key`,
      )
      const key = await admin<{ key: string }>(platform, 'POST', '/keys', { name: 'k', role: 'viewer' })
      const refused = await admin(platform, 'POST', '/enterprises', { name: '' })
      assert.equal(refused.status, 400)
      const added = await admin<{ setupUrl: string }>(platform, 'POST', '/operators', {
        email: 'secret-keeper@example.com',
        role: 'viewer',
      })
      const setupToken = added.body.setupUrl.split('#setup=')[1] as string
      const password = 'a password nobody may read'
      const setup = await fetch(`${platform.adminUrl}/admin/v1/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: setupToken, password }),
      })
      assert.equal(setup.status, 200)
      const trail = JSON.stringify(await query('SELECT * FROM audit_log'))
      for (const secret of [created.body.secret, rotated.body.secret, key.body.key, setupToken, password]) {
        assert.ok(!trail.includes(secret), `the trail holds ${secret}`)
      }
      const operations = (
        (await query('SELECT operation FROM audit_log ORDER BY seq')) as { operation: string }[]
      ).map((kept) => kept.operation)
      for (const operation of [
        'createEnterprise',
        'rotateKey',
        'createKey',
        'addOperator',
        'completeSetup',
      ]) {
        assert.ok(operations.includes(operation), `${operation} in ${operations.join(', ')}`)
      }
      assert.equal(operations.filter((operation) => operation === 'createEnterprise').length, 1)
    })
  })
}
