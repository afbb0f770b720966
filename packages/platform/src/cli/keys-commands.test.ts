import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { jsonError, jsonOf, runCli } from '@earshot/test-kit/run-cli'
import type { ApiKey, CreatedApiKey, Enterprise } from '../admin-client/admin-client.js'
import { ADMIN_TOKEN_REFUSED, API_KEY_REFUSED, NO_CREDENTIAL } from './client-command.js'

/**
 * `earshot keys create|list|revoke`, the built CLI against a running platform: a key created with the
 * break-glass token drives the CLI itself (EARSHOT_API_KEY), its use shows in the list, and once revoked
 * it is refused with the documented message.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

/** The one line of stdout of a --json run, parsed. */

/** The one line of stdout of a failed --json run: {"error": {"code", "msg"}}. */

for (const backend of testBackends) {
  describe(`earshot keys against a running platform (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let breakGlass: Record<string, string>
    let enterpriseId: number
    const earshot = (env: Record<string, string>, ...args: string[]) => runCli(cli, args, env)
    const withKey = (key: string) => ({ EARSHOT_URL: platform.adminUrl, EARSHOT_API_KEY: key })

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      breakGlass = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      ;({ enterpriseId } = await createPartner(platform, 'Keys Co'))
    })
    after(async () => {
      await platform?.stop()
    })

    test('create → the key drives the CLI → list shows its last use → revoke → refused 4010', async () => {
      const created = jsonOf<CreatedApiKey>(
        await earshot(breakGlass, 'keys', 'create', '--name', 'ci', '--role', 'owner', '--json'),
      )
      assert.deepEqual(Object.keys(created), ['keyId', 'key', 'role', 'enterprises', 'expiresAt'])
      assert.match(created.key, /^esk_[A-Za-z0-9_-]{20,}$/)
      assert.deepEqual([created.role, created.enterprises, created.expiresAt], ['owner', null, null])

      // The key alone, no break-glass token: the CLI sends it from EARSHOT_API_KEY.
      const listed = jsonOf<Enterprise[]>(await earshot(withKey(created.key), 'enterprise', 'list', '--json'))
      assert.ok(listed.some((each) => each.enterpriseId === enterpriseId))

      const keys = jsonOf<ApiKey[]>(await earshot(withKey(created.key), 'keys', 'list', '--json'))
      const mine = keys.find((key) => key.keyId === created.keyId)
      assert.ok(mine)
      assert.equal(mine.name, 'ci')
      assert.equal(mine.createdBy, 'break-glass')
      assert.equal(mine.revokedAt, null)
      assert.ok(mine.lastUsedAt !== null && Date.parse(mine.lastUsedAt) > 0, 'its last use is recorded')
      assert.equal(JSON.stringify(mine).includes(created.key), false, 'the list never holds the key')

      const table = await earshot(breakGlass, 'keys', 'list')
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /^ID +NAME +ROLE +ENTERPRISES +STATE +LAST USED +EXPIRES +CREATED BY\n/)
      assert.match(
        table.stdout,
        new RegExp(`^${created.keyId} +ci +owner +all +active +${mine.lastUsedAt} `, 'm'),
      )

      const revoked = jsonOf<ApiKey>(
        await earshot(breakGlass, 'keys', 'revoke', String(created.keyId), '--json'),
      )
      assert.equal(revoked.keyId, created.keyId)
      assert.ok(revoked.revokedAt !== null)

      const refused = await earshot(withKey(created.key), 'enterprise', 'list')
      assert.equal(refused.code, 1)
      assert.equal(refused.stdout, '')
      assert.equal(refused.stderr, `error 4010: ${API_KEY_REFUSED}\n`)
      const refusedJson = await earshot(withKey(created.key), 'keys', 'list', '--json')
      assert.deepEqual(jsonError(refusedJson), { code: 4010, msg: API_KEY_REFUSED })
      const after = await earshot(breakGlass, 'keys', 'list')
      assert.match(after.stdout, new RegExp(`^${created.keyId} +ci +owner +all +revoked `, 'm'))
    })

    test('a key limited to an enterprise, expiring, with a role that lacks keys.manage: 4031 names it', async () => {
      const from = Date.now()
      const created = jsonOf<CreatedApiKey>(
        await earshot(
          breakGlass,
          ...['keys', 'create', '--name', 'dashboard', '--role', 'viewer'],
          ...['--enterprise', String(enterpriseId), '--expires', '12h', '--json'],
        ),
      )
      const to = Date.now()
      assert.deepEqual(created.enterprises, [enterpriseId])
      const expires = Date.parse(created.expiresAt ?? '')
      assert.ok(expires >= from + 12 * 3_600_000 && expires <= to + 12 * 3_600_000, String(created.expiresAt))

      const viewer = withKey(created.key)
      const seen = jsonOf<Enterprise[]>(await earshot(viewer, 'enterprise', 'list', '--json'))
      assert.deepEqual(
        seen.map((each) => each.enterpriseId),
        [enterpriseId],
      )
      const forbidden = await earshot(viewer, 'keys', 'create', '--name', 'x', '--role', 'owner', '--json')
      const error = jsonError(forbidden)
      assert.equal(error.code, 4031)
      assert.match(error.msg, /the viewer role does not grant keys\.manage/)
      assert.equal(forbidden.stderr, `error 4031: ${error.msg}\n`)
    })

    test('readable create: the key once, the warning, how to use it', async () => {
      const run = await earshot(breakGlass, 'keys', 'create', '--name', 'shown', '--role', 'operator')
      assert.equal(run.code, 0, run.stderr)
      const lines = run.stdout.trimEnd().split('\n')
      assert.match(
        lines[0] as string,
        /^Created API key \d+ \("shown"\): role operator, every enterprise, never expires\.$/,
      )
      assert.match(lines[1] as string, /^ {2}key: esk_\S+$/)
      assert.match(run.stdout, /shown only this once/)
      assert.match(run.stdout, /export EARSHOT_API_KEY=<the key>/)
    })

    test('a missing credential, a wrong break-glass token and wrong options each say what to check', async () => {
      const missing = await runCli(cli, ['keys', 'list'], { EARSHOT_URL: platform.adminUrl })
      assert.equal(missing.code, 1)
      assert.equal(missing.stderr, `${NO_CREDENTIAL}\n`)
      const wrong = await earshot(
        { ...breakGlass, EARSHOT_ADMIN_TOKEN: 'not-the-break-glass-token' },
        'keys',
        'list',
      )
      assert.equal(wrong.stderr, `error 4010: ${ADMIN_TOKEN_REFUSED}\n`)
      const unknownKey = await earshot(withKey('esk_not-a-key-at-all-0123456789'), 'keys', 'list')
      assert.equal(unknownKey.stderr, `error 4010: ${API_KEY_REFUSED}\n`)

      const role = await earshot(breakGlass, 'keys', 'create', '--name', 'x', '--role', 'root', '--json')
      assert.equal(jsonError(role).code, 'ERR_EARSHOT_USAGE')
      assert.match(jsonError(role).msg, /owner, admin, operator, viewer/)
      const expires = await earshot(
        breakGlass,
        'keys',
        'create',
        '--name',
        'x',
        '--role',
        'viewer',
        '--expires',
        '3w',
      )
      assert.equal(expires.code, 1)
      assert.match(expires.stderr, /like 90d or 12h/)
      const unknown = await earshot(breakGlass, 'keys', 'revoke', '999999', '--json')
      assert.deepEqual(jsonError(unknown), { code: 4040, msg: 'no API key 999999' })
    })
  })
}
