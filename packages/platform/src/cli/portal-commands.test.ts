import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin, createPartner } from '@earshot/test-kit/calls'
import { jsonError, jsonOf, runCli } from '@earshot/test-kit/run-cli'
import { openLink, portalCall, visit } from '../portal/portal-visit.test.support.js'

/**
 * `earshot portal link|sessions|end`, the built CLI against a running platform: a link it mints opens the
 * portal (view, manage, or an operator's view), the sessions it lists are those opened, and one it ends is
 * refused from its next request on.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

interface SessionRow {
  sessionId: number
  enterpriseId: number
  access: string
  operatorView: boolean
  mintedBy: string
  endedAt: string | null
}

for (const backend of testBackends) {
  describe(`earshot portal against a running platform (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let env: Record<string, string>
    let enterpriseId: number
    const earshot = (...args: string[]) => runCli(cli, args, env)

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
      ;({ enterpriseId } = await createPartner(platform, 'Portal CLI Co'))
    })
    after(() => platform?.stop())

    test('link --json mints a link that opens the portal: view by default, manage, or an operator view', async () => {
      const id = String(enterpriseId)
      const minted = jsonOf<{ url: string; expiresAt: string }>(
        await earshot('portal', 'link', '--enterprise', id, '--json'),
      )
      assert.deepEqual(Object.keys(minted), ['url', 'expiresAt'])
      assert.match(minted.url, /\/portal\/enter\/ptl_[A-Za-z0-9_-]{43}$/)
      assert.equal((await visit(platform, minted.url)).session.access, 'view')

      const manage = jsonOf<{ url: string }>(
        await earshot('portal', 'link', '--enterprise', id, '--access', 'manage', '--json'),
      )
      assert.equal((await visit(platform, manage.url)).session.access, 'manage')

      const look = jsonOf<{ url: string }>(
        await earshot('portal', 'link', '--enterprise', id, '--operator-view', '--json'),
      )
      const looked = (await visit(platform, look.url)).session
      assert.deepEqual([looked.access, looked.operatorView], ['view', true])

      const text = await earshot('portal', 'link', '--enterprise', id)
      assert.equal(text.code, 0, text.stderr)
      assert.match(
        text.stdout,
        /^A view link into enterprise \d+'s portal, for its partner:\n {2}http:\/\/\S+\/portal\/enter\/ptl_/,
      )
      assert.match(text.stdout, /It opens once, until \d{4}-\d\d-\d\dT/)
    })

    test('sessions lists them (one enterprise, or all); end ends one; refusals are the API codes', async () => {
      const entered = await visit(
        platform,
        jsonOf<{ url: string }>(
          await earshot('portal', 'link', '--enterprise', String(enterpriseId), '--json'),
        ).url,
      )
      const sessions = jsonOf<SessionRow[]>(
        await earshot('portal', 'sessions', '--enterprise', String(enterpriseId), '--json'),
      )
      const row = sessions.find((session) => session.sessionId === entered.session.sessionId)
      assert.deepEqual([row?.enterpriseId, row?.mintedBy, row?.endedAt], [enterpriseId, 'break-glass', null])
      const everyone = jsonOf<SessionRow[]>(await earshot('portal', 'sessions', '--json'))
      assert.ok(everyone.length >= sessions.length)
      const other = await createPartner(platform, 'No Sessions Co')
      assert.deepEqual(
        jsonOf(await earshot('portal', 'sessions', '--enterprise', String(other.enterpriseId), '--json')),
        [],
      )

      const listed = await earshot('portal', 'sessions')
      assert.equal(listed.code, 0, listed.stderr)
      assert.match(listed.stdout, /^ID +ENTERPRISE +ACCESS +STATE +LAST SEEN +EXPIRES +MINTED BY +ADDRESS\n/)
      assert.match(
        listed.stdout,
        new RegExp(`^${entered.session.sessionId} +${enterpriseId} +view +open `, 'm'),
      )

      const ended = jsonOf<SessionRow>(
        await earshot('portal', 'end', String(entered.session.sessionId), '--json'),
      )
      assert.equal(ended.sessionId, entered.session.sessionId)
      assert.equal(typeof ended.endedAt, 'string')
      assert.equal((await portalCall(platform, 'GET', 'session', { cookie: entered.cookie })).status, 401)
      const again = await earshot('portal', 'end', String(entered.session.sessionId))
      assert.match(
        again.stdout,
        new RegExp(`^Ended portal session ${entered.session.sessionId} of enterprise`),
      )

      assert.deepEqual(jsonError(await earshot('portal', 'end', '999999', '--json')), {
        code: 4040,
        msg: 'no portal session 999999',
      })
      assert.equal(jsonError(await earshot('portal', 'link', '--enterprise', '999999', '--json')).code, 4040)
      const usage = await earshot('portal', 'link', '--enterprise', String(enterpriseId), '--access', 'all')
      assert.notEqual(usage.code, 0)
      assert.match(usage.stderr, /--access <access>' argument 'all' is invalid/)
    })

    test('a viewer is told the permission a partner link needs', async () => {
      const created = await admin<{ key: string }>(platform, 'POST', '/keys', {
        name: 'viewer',
        role: 'viewer',
      })
      const asViewer = { EARSHOT_URL: platform.adminUrl, EARSHOT_API_KEY: created.body.key }
      const refused = await runCli(
        cli,
        ['portal', 'link', '--enterprise', String(enterpriseId), '--json'],
        asViewer,
      )
      const error = jsonError(refused)
      assert.equal(error.code, 4031)
      assert.match(error.msg, /the viewer role does not grant portal\.manage/)
      const look = await runCli(
        cli,
        ['portal', 'link', '--enterprise', String(enterpriseId), '--operator-view'],
        asViewer,
      )
      assert.equal(look.code, 0, look.stderr)
      const url = /http:\/\/\S+/.exec(look.stdout)?.[0] as string
      assert.equal((await openLink(platform, url)).status, 303)
    })
  })
}
