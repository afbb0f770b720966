import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { jsonError, jsonOf, runCli } from '@earshot/test-kit/run-cli'
import type { AddedOperator, Operator } from '../admin-client/admin-client.js'

/**
 * `earshot operators add|list|update|sign-out`, the built CLI against a running platform, with an owner's
 * API key: an operator added gets a setup link, which sets their password; their role, name, scope and
 * enabled change; their sessions end.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))
const PASSWORD = 'correct horse battery staple'

for (const backend of testBackends) {
  describe(`earshot operators against a running platform (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let env: Record<string, string>
    let acme: number
    let globex: number
    const earshot = (...args: string[]) => runCli(cli, args, env)

    /** POST to an open access route (setup, sign-in) as the console does. */
    async function post(path: string, body: unknown): Promise<Response> {
      return fetch(`${platform.adminUrl}/admin/v1/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    }

    async function operator(operatorId: number): Promise<Operator> {
      const operators = jsonOf<Operator[]>(await earshot('operators', 'list', '--json'))
      const found = operators.find((each) => each.operatorId === operatorId)
      assert.ok(found, `operator ${operatorId} is listed`)
      return found
    }

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      ;({ enterpriseId: acme } = await createPartner(platform, 'Acme'))
      ;({ enterpriseId: globex } = await createPartner(platform, 'Globex'))
      const owner = await runCli(cli, ['keys', 'create', '--name', 'owner', '--role', 'owner', '--json'], {
        EARSHOT_URL: platform.adminUrl,
        EARSHOT_ADMIN_TOKEN: platform.adminToken,
      })
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_API_KEY: jsonOf<{ key: string }>(owner).key }
    })
    after(async () => {
      await platform?.stop()
    })

    test('add prints the setup link; the link sets the password; list shows them', async () => {
      const added = jsonOf<AddedOperator>(
        await earshot('operators', 'add', 'ada@example.com', '--role', 'viewer', '--name', 'Ada', '--json'),
      )
      assert.deepEqual(Object.keys(added), ['operatorId', 'setupUrl'])
      const token = new URL(added.setupUrl).hash.replace(/^#setup=/, '')
      assert.equal(added.setupUrl, `${platform.adminUrl}/console/#setup=${token}`)

      assert.deepEqual(
        { ...(await operator(added.operatorId)), createdAt: '' },
        {
          operatorId: added.operatorId,
          email: 'ada@example.com',
          name: 'Ada',
          role: 'viewer',
          enterprises: null,
          enabled: true,
          setUp: false,
          sso: false,
          createdAt: '',
        },
      )
      const before = await earshot('operators', 'list')
      assert.match(before.stdout, /^ID +EMAIL +NAME +ROLE +ENTERPRISES +STATE +SIGN-IN\n/)
      assert.match(
        before.stdout,
        new RegExp(`^${added.operatorId} +ada@example\\.com +Ada +viewer +all +enabled +not set up$`, 'm'),
      )

      assert.equal((await post('setup', { token, password: PASSWORD })).status, 200)
      assert.equal((await operator(added.operatorId)).setUp, true)
      const after = await earshot('operators', 'list')
      assert.match(after.stdout, new RegExp(`^${added.operatorId} +ada@example\\.com .* +password$`, 'm'))
    })

    test('add with --enterprise repeated limits them; readable add names the link; a taken email is 4001', async () => {
      const run = await earshot(
        ...['operators', 'add', 'bo@example.com', '--role', 'operator'],
        ...['--enterprise', String(acme), '--enterprise', String(globex)],
      )
      assert.equal(run.code, 0, run.stderr)
      const [first, second, link] = run.stdout.trimEnd().split('\n')
      const operatorId = Number(/^Added operator (\d+) /.exec(first as string)?.[1])
      assert.equal(
        first,
        `Added operator ${operatorId} (bo@example.com): role operator, enterprises ${acme}, ${globex}.`,
      )
      assert.equal(second, 'Send them this one-time link (valid 7 days) to set their password:')
      assert.match(link as string, /^ {2}http:\/\/\S+\/console\/#setup=\S+$/)
      assert.deepEqual((await operator(operatorId)).enterprises, [acme, globex])

      const taken = await earshot('operators', 'add', 'bo@example.com', '--role', 'viewer', '--json')
      assert.deepEqual(jsonError(taken), { code: 4001, msg: 'email: an operator with bo@example.com exists' })
    })

    test('update changes role, name, scope and enabled; nothing to change, or both scopes, is refused', async () => {
      const { operatorId } = jsonOf<AddedOperator>(
        await earshot('operators', 'add', 'cy@example.com', '--role', 'viewer', '--json'),
      )
      const id = String(operatorId)
      const changed = jsonOf<Operator>(
        await earshot(
          ...['operators', 'update', id, '--role', 'admin', '--name', 'Cy'],
          ...['--enterprise', String(acme), '--json'],
        ),
      )
      assert.deepEqual(
        [changed.role, changed.name, changed.enterprises, changed.enabled],
        ['admin', 'Cy', [acme], true],
      )
      const all = jsonOf<Operator>(await earshot('operators', 'update', id, '--all-enterprises', '--json'))
      assert.equal(all.enterprises, null)

      const disabled = await earshot('operators', 'update', id, '--disable')
      assert.equal(disabled.code, 0, disabled.stderr)
      assert.equal(
        disabled.stdout,
        `Operator ${operatorId} (cy@example.com): role admin, every enterprise, disabled: their sessions ended.\n`,
      )
      assert.equal((await operator(operatorId)).enabled, false)
      const enabled = jsonOf<Operator>(await earshot('operators', 'update', id, '--enable', '--json'))
      assert.equal(enabled.enabled, true)

      const nothing = await earshot('operators', 'update', id, '--json')
      assert.equal(jsonError(nothing).code, 'ERR_EARSHOT_COMMAND')
      assert.match(jsonError(nothing).msg, /^nothing to change: give --role, --name/)
      const both = await earshot(
        'operators',
        'update',
        id,
        '--enterprise',
        '1',
        '--all-enterprises',
        '--json',
      )
      assert.equal(jsonError(both).code, 'ERR_EARSHOT_USAGE')
      const unknown = await earshot('operators', 'update', '999999', '--role', 'viewer', '--json')
      assert.deepEqual(jsonError(unknown), { code: 4040, msg: 'no operator 999999' })
    })

    test('sign-out ends their sessions: the cookie stops working', async () => {
      const { operatorId, setupUrl } = jsonOf<AddedOperator>(
        await earshot('operators', 'add', 'di@example.com', '--role', 'viewer', '--json'),
      )
      const token = new URL(setupUrl).hash.replace(/^#setup=/, '')
      const setUp = await post('setup', { token, password: PASSWORD })
      assert.equal(setUp.status, 200)
      const cookie = (setUp.headers.get('set-cookie') ?? '').split(';')[0] as string
      const session = () => fetch(`${platform.adminUrl}/admin/v1/session`, { headers: { cookie } })
      assert.equal((await session()).status, 200)

      const ended = jsonOf<{ ended: number }>(
        await earshot('operators', 'sign-out', String(operatorId), '--json'),
      )
      assert.deepEqual(ended, { ended: 1 })
      assert.equal((await session()).status, 401)
      const again = await earshot('operators', 'sign-out', String(operatorId))
      assert.equal(again.stdout, `Ended 0 sessions of operator ${operatorId}.\n`)
    })
  })
}
