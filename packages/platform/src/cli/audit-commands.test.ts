import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { jsonOf, runCli } from '@earshot/test-kit/run-cli'
import type { AuditRow, AuditVerification, CreatedApiKey } from '../admin-client/admin-client.js'

/**
 * `earshot audit list|verify|export`, the built CLI against a running platform: the trail filtered, every
 * row exported, and the chain verified, until a row is changed in the database itself (as someone with
 * the database's credentials could, the append-only trigger turned off first), which verify finds.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

type Listed = Omit<AuditRow, 'userAgent' | 'prevHash' | 'hash'>

for (const backend of testBackends) {
  describe(`earshot audit against a running platform (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let env: Record<string, string>
    let keyActor: string
    let acme: number
    let globex: number
    const earshot = (...args: string[]) => runCli(cli, args, env)

    async function rowCount(): Promise<number> {
      const [row] = await platform.context.db.query<{ n: number | string }>(
        'SELECT count(*) AS n FROM audit_log',
      )
      return Number(row?.n)
    }

    async function createEnterprise(name: string): Promise<number> {
      return jsonOf<{ enterpriseId: number }>(await earshot('enterprise', 'create', '--name', name, '--json'))
        .enterpriseId
    }

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      const created = await runCli(
        cli,
        ['keys', 'create', '--name', 'auditor', '--role', 'owner', '--json'],
        {
          EARSHOT_URL: platform.adminUrl,
          EARSHOT_ADMIN_TOKEN: platform.adminToken,
        },
      )
      const key = jsonOf<CreatedApiKey>(created)
      keyActor = `key:${key.keyId}`
      // Every call below presents the key: its reads add no row, so the trail holds only these changes.
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_API_KEY: key.key }
      acme = await createEnterprise('Acme')
      globex = await createEnterprise('Globex')
      for (const id of [acme, globex, acme])
        assert.equal(
          (await earshot('enterprise', 'update', String(id), '--require-issued-at', 'true')).code,
          0,
        )
    })
    after(async () => {
      await platform?.stop()
    })

    test('list --json: rows newest first, each with at, actor, operation, target, before, after, address, outcome', async () => {
      const rows = jsonOf<Listed[]>(await earshot('audit', 'list', '--json'))
      assert.equal(rows.length, await rowCount())
      assert.deepEqual(Object.keys(rows[0] as Listed), [
        'seq',
        'at',
        'actor',
        'operation',
        'target',
        'before',
        'after',
        'address',
        'outcome',
      ])
      assert.deepEqual(
        rows.map((row) => row.operation),
        [
          'updateEnterprise',
          'updateEnterprise',
          'updateEnterprise',
          'createEnterprise',
          'createEnterprise',
          'createKey',
        ],
      )
      const [latest] = rows as [Listed]
      assert.deepEqual(latest.actor, { kind: 'key', id: keyActor, name: 'auditor' })
      assert.deepEqual(latest.target, { enterpriseId: acme })
      assert.deepEqual(latest.after, { requireIssuedAt: true })
      assert.equal(latest.outcome, 'ok')
      assert.match(latest.address ?? '', /127\.0\.0\.1/)
      assert.deepEqual((rows.at(-1) as Listed).actor, {
        kind: 'break-glass',
        id: 'break-glass',
        name: 'EARSHOT_ADMIN_TOKEN',
      })
    })

    test('list filters by actor, enterprise, time, and pages with --limit and --before', async () => {
      const list = async (...args: string[]) =>
        jsonOf<Listed[]>(await earshot('audit', 'list', ...args, '--json'))
      const byKey = await list('--actor', keyActor)
      assert.equal(byKey.length, 5)
      assert.ok(byKey.every((row) => row.actor.id === keyActor))
      assert.deepEqual(
        (await list('--actor', 'break-glass')).map((row) => row.operation),
        ['createKey'],
      )
      const aboutAcme = await list('--enterprise', String(acme))
      assert.deepEqual(
        aboutAcme.map((row) => row.operation),
        ['updateEnterprise', 'updateEnterprise', 'createEnterprise'],
      )
      assert.deepEqual(await list('--since', '2999-01-01T00:00:00Z'), [])
      assert.equal((await list('--since', '1h')).length, byKey.length + 1)

      const [first] = await list('--limit', '1')
      const [second] = await list('--limit', '1', '--before', String(first?.seq))
      assert.equal(second?.seq, (first?.seq as number) - 1)

      const readable = await earshot('audit', 'list', '--limit', '2')
      assert.equal(readable.code, 0, readable.stderr)
      const lines = readable.stdout.trimEnd().split('\n')
      assert.match(lines[0] as string, /^SEQ +AT +ACTOR +OPERATION +TARGET +FIELDS +OUTCOME +ADDRESS$/)
      assert.match(
        lines[1] as string,
        new RegExp(
          `^${first?.seq} +\\S+ +auditor \\(${keyActor}\\) +updateEnterprise +enterpriseId=${acme} +requireIssuedAt +ok `,
        ),
      )
      assert.equal(lines.at(-1), `Showing the newest 2; for older ones add --before ${second?.seq}.`)
    })

    test('export prints every row as JSON Lines, oldest first', async () => {
      const run = await earshot('audit', 'export')
      assert.equal(run.code, 0, run.stderr)
      const lines = run.stdout.trimEnd().split('\n')
      assert.equal(lines.length, await rowCount())
      const rows = lines.map((line) => JSON.parse(line) as AuditRow)
      assert.deepEqual(
        rows.map((row) => row.seq),
        rows.map((_, index) => index + 1),
      )
      assert.equal(rows[1]?.prevHash, rows[0]?.hash, 'each row links to the one before')
    })

    test('verify holds, until a row is changed in the database: it names the seq, exit 1', async () => {
      const held = jsonOf<AuditVerification>(await earshot('audit', 'verify', '--json'))
      const count = await rowCount()
      assert.deepEqual(held, { ok: true, checked: count })
      assert.equal(
        (await earshot('audit', 'verify')).stdout,
        `The audit trail holds: ${count} rows checked.\n`,
      )

      // A tamperer with the database's credentials: the append-only trigger off, a row's change rewritten.
      const db = platform.context.db
      const seq = 3
      await db.query('ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only')
      await db.query(`UPDATE audit_log SET after = '{"name": "Someone Else"}' WHERE seq = $1`, [seq])
      await db.query('ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only')

      const json = await earshot('audit', 'verify', '--json')
      assert.equal(json.code, 1)
      assert.deepEqual(JSON.parse(json.stdout), { ok: false, checked: seq - 1, firstBad: seq })
      const message =
        `the audit trail's hash chain breaks at seq ${seq}: that row was changed, or a row removed, outside ` +
        `Earshot (${seq - 1} rows before it hold). Compare with an earlier \`earshot audit export\` to see what changed.\n`
      assert.equal(json.stderr, message)
      const readable = await earshot('audit', 'verify')
      assert.equal(readable.code, 1)
      assert.equal(readable.stdout, '')
      assert.equal(readable.stderr, message)
    })
  })
}
