import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin, adminCall, createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { AdminApiError, AdminClient } from '../admin-client/admin-client.js'
import { selfServiceActions } from '../self-service/self-service-actions.js'
import { prunePortal } from './portal-sessions.js'
import { mintLink, openLink, portalCall, refused, visit } from './portal-visit.test.support.js'

/*
 * The operators' side of the portal on both backends: who may mint links, look, list and end sessions (by
 * role and by scope), who the trail and the session list name as the link's minter, and the janitor's
 * pruning; then, on one platform behind https with a small rate limit, the cookie's Secure attribute and
 * the enterprise's limit applied to the portal's calls.
 */

type Json = Record<string, unknown>

async function keyOf(platform: TestPlatform, role: string, enterprises?: number[]): Promise<AdminClient> {
  const created = await admin<{ key: string }>(platform, 'POST', '/keys', {
    name: `${role} portal`,
    role,
    ...(enterprises && { enterprises }),
  })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  return new AdminClient(platform.adminUrl, created.body.key)
}

/** The refusal of a call that must be refused. */
async function refusal(call: Promise<unknown>): Promise<AdminApiError> {
  const answer = await call.catch((error: unknown) => error)
  assert.ok(answer instanceof AdminApiError, `answered: ${JSON.stringify(answer)}`)
  return answer
}

for (const backend of testBackends) {
  describe(`the portal's operators (${backend})`, { timeout: 180_000 }, () => {
    let platform: TestPlatform
    let mine: TestPartner
    let theirs: TestPartner

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      mine = await createPartner(platform, 'Mine')
      theirs = await createPartner(platform, 'Theirs')
    })
    after(() => platform?.stop())

    test('a viewer looks and lists but mints no partner link and ends nothing; an admin does', async () => {
      const viewer = await keyOf(platform, 'viewer')
      const operator = await keyOf(platform, 'operator')
      for (const client of [viewer, operator]) {
        const minting = await refusal(
          client.call('createPortalLink', {
            params: { enterpriseId: mine.enterpriseId },
            body: { access: 'manage' },
          }),
        )
        assert.deepEqual([minting.code, minting.status], [4031, 403])
        assert.match(minting.msg, /does not grant portal\.manage/)
      }
      const look = await viewer.call('createOperatorViewLink', {
        params: { enterpriseId: mine.enterpriseId },
      })
      const session = (await visit(platform, look.url)).session
      assert.deepEqual([session.access, session.operatorView], ['view', true])
      const { sessions } = await viewer.call('listPortalSessions', {
        query: { enterpriseId: String(mine.enterpriseId) },
      })
      assert.ok(sessions.some((each) => each.sessionId === session.sessionId))
      const ending = await refusal(
        viewer.call('endPortalSession', { params: { sessionId: session.sessionId } }),
      )
      assert.equal(ending.code, 4031)

      const administrator = await keyOf(platform, 'admin')
      const minted = await administrator.call('createPortalLink', {
        params: { enterpriseId: mine.enterpriseId },
        body: { access: 'manage' },
      })
      assert.ok(Date.parse(minted.expiresAt) - Date.now() <= 15 * 60_000)
      const entered = await visit(platform, minted.url)
      const ended = await administrator.call('endPortalSession', {
        params: { sessionId: entered.session.sessionId },
      })
      assert.equal(ended.enterpriseId, mine.enterpriseId)
      assert.match(ended.mintedBy, /^key:\d+$/)
      refused(await portalCall(platform, 'GET', 'session', { cookie: entered.cookie }), 4010, /ended/)

      const { rows } = await adminCall(platform, 'listAudit', {
        query: { enterprise: String(mine.enterpriseId) },
      })
      const mint = rows.find((row) => row.operation === 'createPortalLink' && row.actor.id === ended.mintedBy)
      assert.deepEqual([mint?.actor.kind, mint?.after, mint?.outcome], ['key', { access: 'manage' }, 'ok'])
      assert.equal(JSON.stringify(rows).includes(minted.url), false, 'the trail never holds a link')
      assert.ok(rows.some((row) => row.operation === 'endPortalSession' && row.actor.id === ended.mintedBy))
    })

    test("a key limited to one enterprise: another's sessions are unlisted and unknown", async () => {
      const limited = await keyOf(platform, 'admin', [mine.enterpriseId])
      const foreign = await visit(platform, await mintLink(platform, theirs.enterpriseId))
      const own = await visit(platform, await mintLink(platform, mine.enterpriseId))
      const { sessions } = await limited.call('listPortalSessions')
      assert.ok(sessions.length > 0)
      assert.ok(sessions.every((session) => session.enterpriseId === mine.enterpriseId))
      assert.ok(sessions.some((session) => session.sessionId === own.session.sessionId))
      const filtered = await limited.call('listPortalSessions', {
        query: { enterpriseId: String(theirs.enterpriseId) },
      })
      assert.deepEqual(filtered.sessions, [])
      const ending = await refusal(
        limited.call('endPortalSession', { params: { sessionId: foreign.session.sessionId } }),
      )
      assert.deepEqual([ending.code, ending.msg], [4040, `no portal session ${foreign.session.sessionId}`])
      const minting = await refusal(
        limited.call('createPortalLink', { params: { enterpriseId: theirs.enterpriseId }, body: {} }),
      )
      assert.deepEqual([minting.code, minting.msg], [4040, `no enterprise ${theirs.enterpriseId}`])
      assert.equal((await portalCall(platform, 'GET', 'session', { cookie: foreign.cookie })).status, 200)
      const unknown = await refusal(
        adminCall(platform, 'endPortalSession', { params: { sessionId: 999_999 } }),
      )
      assert.equal(unknown.code, 4040)
      const bad = await refusal(adminCall(platform, 'listPortalSessions', { query: { enterpriseId: 'x' } }))
      assert.equal(bad.code, 4001)
    })

    test('the session list shows each session as operators need it', async () => {
      const entered = await visit(platform, await mintLink(platform, theirs.enterpriseId, 'manage'))
      const { sessions } = await adminCall(platform, 'listPortalSessions', {
        query: { enterpriseId: String(theirs.enterpriseId) },
      })
      const row = sessions.find((session) => session.sessionId === entered.session.sessionId) as Json
      assert.deepEqual(Object.keys(row).sort(), [
        'access',
        'address',
        'createdAt',
        'endedAt',
        'enterpriseId',
        'expiresAt',
        'lastSeenAt',
        'mintedBy',
        'operatorView',
        'sessionId',
        'userAgent',
      ])
      assert.deepEqual(
        [row.access, row.operatorView, row.mintedBy, row.endedAt, row.address],
        ['manage', false, 'break-glass', null, '127.0.0.1'],
      )
      assert.equal(row.expiresAt, entered.session.expiresAt)
    })

    test('the janitor forgets links and sessions a day after they expired or ended', async () => {
      const unopened = await mintLink(platform, mine.enterpriseId)
      const entered = await visit(platform, await mintLink(platform, mine.enterpriseId))
      const now = Date.now()
      const kept = await prunePortal(platform.context.db, now)
      assert.deepEqual(kept, { links: 0, sessions: 0 })
      const pruned = await prunePortal(platform.context.db, now + 9 * 3600_000 + 86_400_000)
      assert.ok(pruned.links >= 2 && pruned.sessions >= 1, JSON.stringify(pruned))
      const { sessions } = await adminCall(platform, 'listPortalSessions')
      assert.deepEqual(sessions, [])
      assert.equal((await openLink(platform, unopened)).status, 403)
      refused(await portalCall(platform, 'GET', 'session', { cookie: entered.cookie }), 4010, /unknown/)
    })
  })
}

describe('the portal behind https, under a rate limit (pglite)', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner

  before(async () => {
    platform = await startTestPlatform('pglite', {
      pushDispatch: false,
      publicUrl: 'https://partners.example',
      rateLimitPerMinute: 4,
    })
    partner = await createPartner(platform, 'Limited Co')
  })
  after(() => platform?.stop())

  test('the cookie is Secure; the enterprise rate limit counts the portal calls', async () => {
    const url = await mintLink(platform, partner.enterpriseId)
    assert.match(url, /^https:\/\/partners\.example\/portal\/enter\/ptl_/)
    const entered = await openLink(platform, url)
    assert.match(entered.headers.get('set-cookie') ?? '', /; Secure$/)
    const cookie = (entered.headers.get('set-cookie') ?? '').split(';', 1)[0] as string
    const answers: number[] = []
    for (let call = 0; call < 5; call++) {
      answers.push((await portalCall(platform, 'GET', 'session', { cookie })).status)
    }
    assert.deepEqual(answers, [200, 200, 200, 200, 429])
    const limited = await portalCall(platform, 'GET', 'session', { cookie })
    refused(limited, 4290, /rate limit/)
    assert.ok(Number(limited.headers.get('retry-after')) > 0)
  })

  test("the partner document lists the portal's routes with the session cookie as their security", async () => {
    const document = (await (await fetch(`${platform.partnerUrl}/openapi.json`)).json()) as Json
    const paths = document.paths as Record<string, Record<string, Json>>
    for (const action of selfServiceActions) {
      const path = action.contract.path.replace('/openapi/v1/', '/portal/api/')
      const operation = paths[path]?.post
      assert.ok(operation, `${path} is documented`)
      assert.deepEqual(operation.security, [{ portalSession: [] }])
      const forbidden = ((operation.responses as Record<string, Json>)['403']?.description ?? '') as string
      assert.equal(forbidden.includes('4031'), action.access === 'manage', `${path}: ${forbidden}`)
    }
    assert.deepEqual(paths['/portal/enter/{link}']?.get?.security, [])
    const schemes = (document.components as { securitySchemes: Json }).securitySchemes
    assert.deepEqual(schemes.portalSession, {
      type: 'apiKey',
      in: 'cookie',
      name: 'earshot_portal',
      description:
        'A portal session, set by GET /portal/enter/{link}; every POST also carries its csrfToken as x-csrf-token',
    })
  })
})
