import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { closedPort } from '@earshot/test-kit/run-cli'
import { mintLink, openLink, portalCall, refused, visit } from './portal-visit.test.support.js'

/*
 * The partner portal's routes through real HTTP on both backends: entering by a one-time link (its cookie,
 * spent once by a GET and never by a HEAD, expiring), the session and its CSRF token, what view, manage and
 * an operator's view may do, another enterprise's ids unknown, sessions ended, expired or signed out
 * refused, and every change, in the portal or through the sealed partner API, in the audit trail with the
 * session or the token as its actor. The clock is the platform's own, moved by the tests that need time to
 * pass.
 */

const recording = (audioId: string) => ({
  audioId,
  deviceUid: 'dev-portal',
  title: `Portal ${audioId}`,
  recordedAt: '2026-05-01T08:00:00+08:00',
  denoiseUrl: `https://cdn.example/${audioId}.mp3`,
  recordDuration: 1200,
})

/** The message of an id's refusal with the id taken out, to compare an unknown id's with another's. */
const withoutId = (msg: unknown, id: number) => String(msg).replaceAll(String(id), 'ID')

for (const backend of testBackends) {
  describe(`the partner portal (${backend})`, { timeout: 180_000 }, () => {
    let platform: TestPlatform
    let offsetMs = 0
    let acme: TestPartner
    let otherEndpointId: number
    let otherDeliveryId: number
    let unanswered: string

    /** Runs work with the platform's clock moved ahead, then puts it back. */
    async function later<T>(ms: number, work: () => Promise<T>): Promise<T> {
      offsetMs += ms
      try {
        return await work()
      } finally {
        offsetMs -= ms
      }
    }

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { pushDispatch: false },
        { clock: () => Date.now() + offsetMs },
      )
      unanswered = `http://127.0.0.1:${await closedPort()}/hook`
      acme = await createPartner(platform, 'Acme Portal')
      const other = await createPartner(platform, 'Other Co')
      const endpoint = await adminCall(platform, 'addEndpoint', {
        params: { enterpriseId: other.enterpriseId },
        body: { url: `${unanswered}/other` },
      })
      otherEndpointId = endpoint.endpointId
      await ingest(platform, other.enterpriseId, recording('other-1'))
      otherDeliveryId = await eventually(
        async () => {
          const { deliveries } = await adminCall(platform, 'listDeliveries', {
            query: { enterpriseId: String(other.enterpriseId) },
          })
          return deliveries[0]?.deliveryId
        },
        10_000,
        "the other enterprise's delivery",
      )
    })
    after(() => platform?.stop())

    test('a link opens a session once, with its cookie; spent, expired or unknown it gets the 403 page', async () => {
      const url = await mintLink(platform, acme.enterpriseId)
      assert.match(url, new RegExp(`^${platform.partnerUrl}/portal/enter/ptl_[A-Za-z0-9_-]{43}$`))
      const entered = await openLink(platform, url)
      assert.equal(entered.status, 303)
      assert.equal(entered.headers.get('location'), '/portal/')
      assert.match(
        entered.headers.get('set-cookie') ?? '',
        /^earshot_portal=pts_[A-Za-z0-9_-]{43}; Path=\/portal; HttpOnly; SameSite=Lax; Max-Age=28800$/,
      )

      const again = await openLink(platform, url)
      const waited = await mintLink(platform, acme.enterpriseId)
      const expired = await later(15 * 60_000 + 1000, () => openLink(platform, waited))
      const unknown = await openLink(platform, `${platform.partnerUrl}/portal/enter/ptl_never-minted`)
      for (const page of [again, unknown, expired]) {
        assert.equal(page.status, 403)
        assert.equal(page.headers.get('set-cookie'), null)
        assert.match(page.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/)
        const policy = page.headers.get('content-security-policy') ?? ''
        assert.match(policy, /default-src 'none'/)
        assert.match(policy, /script-src 'self'/)
        assert.doesNotMatch(policy, /unsafe-inline/)
        const html = await page.text()
        assert.match(html, /already used, or it has expired/)
        assert.match(html, /Ask your operator/)
        assert.match(html, /earshot-partner portal/)
        assert.match(html, /POST \/openapi\/v1\/portal\/link/)
        assert.doesNotMatch(html, /<script|<style|style=/)
      }
    })

    test('a HEAD of a link (a link preview looking first) spends nothing: a GET after it still enters', async () => {
      const url = await mintLink(platform, acme.enterpriseId)
      const { pathname } = new URL(url)
      for (const path of [pathname, '/portal/enter/ptl_never-minted']) {
        const head = await fetch(`${platform.partnerUrl}${path}`, { method: 'HEAD', redirect: 'manual' })
        assert.equal(head.status, 200, path)
        assert.equal(head.headers.get('set-cookie'), null)
        assert.equal(head.headers.get('cache-control'), 'no-store')
        assert.equal(await head.text(), '')
      }
      const { session } = await visit(platform, url)
      assert.equal(session.enterpriseId, acme.enterpriseId)
    })

    test('the session answers its enterprise, access and CSRF token; without a cookie 4010', async () => {
      const { cookie, session } = await visit(platform, await mintLink(platform, acme.enterpriseId))
      assert.deepEqual(Object.keys(session).sort(), [
        'access',
        'csrfToken',
        'enterpriseId',
        'enterpriseName',
        'expiresAt',
        'operatorView',
        'retentionDays',
        'sessionId',
      ])
      assert.deepEqual(
        [
          session.enterpriseId,
          session.enterpriseName,
          session.access,
          session.operatorView,
          session.retentionDays,
        ],
        [acme.enterpriseId, 'Acme Portal', 'view', false, null],
      )
      const lasts = Date.parse(session.expiresAt) - Date.now()
      assert.ok(lasts > 8 * 3600_000 - 60_000 && lasts <= 8 * 3600_000, session.expiresAt)
      const again = await portalCall(platform, 'GET', 'session', { cookie })
      assert.equal(again.headers.get('cache-control'), 'no-store')

      refused(await portalCall(platform, 'GET', 'session'), 4010, /no portal session: open a new portal link/)
      const made = await portalCall(platform, 'GET', 'session', { cookie: 'earshot_portal=pts_made-up' })
      refused(made, 4010, /unknown/)
      refused(await portalCall(platform, 'POST', 'endpoints/list'), 4010, /no portal session/)
    })

    test("a POST needs the session's CSRF token", async () => {
      const portal = await visit(platform, await mintLink(platform, acme.enterpriseId))
      const missing = await portal.post('endpoints/list', {}, null)
      refused(
        missing,
        4010,
        /^this POST has no x-csrf-token header; the session itself is still open: send the csrfToken that GET \/portal\/api\/session answers/,
      )
      const wrong = await portal.post('endpoints/list', {}, 'not-the-token')
      const longer = await portal.post('endpoints/list', {}, `${portal.session.csrfToken}x`)
      for (const answer of [wrong, longer]) {
        refused(
          answer,
          4010,
          /^this POST's x-csrf-token header is not this session's CSRF token; the session itself is still open/,
        )
      }
      for (const answer of [missing, wrong, longer]) {
        assert.doesNotMatch(answer.body.msg as string, /ended|expired|open a new portal link/)
      }
      const listed = await portal.post('endpoints/list', {})
      assert.equal(listed.status, 200, JSON.stringify(listed.body))
      assert.deepEqual(listed.body, { items: [] })
    })

    test("a view session reads; a manage session changes too; an operator's view only reads", async () => {
      const view = await visit(platform, await mintLink(platform, acme.enterpriseId, 'view'))
      assert.equal((await view.post('endpoints/list')).status, 200)
      const levels = await view.post('levels', { window: '24h' })
      assert.equal(levels.status, 200, JSON.stringify(levels.body))
      assert.equal(levels.body.backlog, 0)
      const page = await view.post('deliveries/list', { size: 5 })
      assert.deepEqual(page.body, { items: [], nextCursor: null, hasMore: false })
      for (const [path, body] of [
        ['endpoints/add', { url: `${unanswered}/acme` }],
        ['key/rotate', {}],
        ['deliveries/replay', { states: ['failed'], since: '2026-01-01T00:00:00Z' }],
      ] as const) {
        refused(await view.post(path, body), 4031, /this portal session can view only: ask for a manage link/)
      }

      const manage = await visit(platform, await mintLink(platform, acme.enterpriseId, 'manage'))
      assert.equal(manage.session.access, 'manage')
      const added = await manage.post('endpoints/add', {
        url: `${unanswered}/acme`,
        eventTypes: ['transcript_ready'],
        description: 'transcripts',
      })
      assert.equal(added.status, 200, JSON.stringify(added.body))
      assert.deepEqual(added.body.eventTypes, ['recording.transcript_ready'])
      const endpointId = added.body.endpointId as number
      const updated = await manage.post('endpoints/update', { endpointId, enabled: false, maxPerSecond: 5 })
      assert.deepEqual([updated.body.enabled, updated.body.maxPerSecond], [false, 5])
      const listed = await view.post('endpoints/list')
      assert.deepEqual(
        (listed.body.items as { endpointId: number }[]).map((each) => each.endpointId),
        [endpointId],
      )
      const removed = await manage.post('endpoints/remove', { endpointId })
      assert.deepEqual(removed.body, { endpointId, cancelled: 0 })

      const minted = await adminCall(platform, 'createOperatorViewLink', {
        params: { enterpriseId: acme.enterpriseId },
      })
      const look = await visit(platform, minted.url)
      assert.deepEqual([look.session.access, look.session.operatorView], ['view', true])
      assert.equal((await look.post('endpoints/list')).status, 200)
      refused(await look.post('endpoints/add', { url: `${unanswered}/x` }), 4031, /operator's read-only view/)
      refused(await look.post('key/rotate'), 4031, /operator's read-only view/)
    })

    test("another enterprise's endpoint and delivery ids are as unknown as ids that never were (4040)", async () => {
      const manage = await visit(platform, await mintLink(platform, acme.enterpriseId, 'manage'))
      const never = 999_999_999
      for (const [path, field] of [
        ['endpoints/update', 'endpointId'],
        ['endpoints/remove', 'endpointId'],
        ['deliveries/replay', 'deliveryId'],
      ] as const) {
        const id = field === 'endpointId' ? otherEndpointId : otherDeliveryId
        const others = await manage.post(path, {
          [field]: id,
          ...(path === 'endpoints/update' && { enabled: false }),
        })
        const unknown = await manage.post(path, {
          [field]: never,
          ...(path === 'endpoints/update' && { enabled: false }),
        })
        refused(others, 4040)
        refused(unknown, 4040)
        assert.equal(withoutId(others.body.msg, id), withoutId(unknown.body.msg, never), path)
      }
      const theirs = await manage.post('deliveries/list', { audioId: 'other-1' })
      assert.deepEqual(theirs.body.items, [])
      const view = await visit(platform, await mintLink(platform, acme.enterpriseId, 'view'))
      const listed = await view.post('endpoints/list')
      assert.deepEqual(listed.body.items, [])
    })

    test('a session ended by an operator, signed out, expired, or of a disabled enterprise is refused', async () => {
      const ended = await visit(platform, await mintLink(platform, acme.enterpriseId))
      const answer = await adminCall(platform, 'endPortalSession', {
        params: { sessionId: ended.session.sessionId },
      })
      assert.equal(typeof answer.endedAt, 'string')
      refused(await portalCall(platform, 'GET', 'session', { cookie: ended.cookie }), 4010, /has ended/)
      refused(await ended.post('endpoints/list'), 4010, /has ended/)

      const signedOut = await visit(platform, await mintLink(platform, acme.enterpriseId))
      const out = await signedOut.post('sign-out')
      assert.deepEqual([out.status, out.body], [200, { signedOut: true }])
      assert.match(out.headers.get('set-cookie') ?? '', /^earshot_portal=; Path=\/portal; .*Max-Age=0/)
      refused(await portalCall(platform, 'GET', 'session', { cookie: signedOut.cookie }), 4010, /has ended/)

      const expiring = await visit(platform, await mintLink(platform, acme.enterpriseId))
      const afterEightHours = await later(8 * 3600_000 + 1000, () =>
        portalCall(platform, 'GET', 'session', { cookie: expiring.cookie }),
      )
      refused(afterEightHours, 4010, /has expired: open a new portal link/)

      const closing = await createPartner(platform, 'Closing Co')
      const inside = await visit(platform, await mintLink(platform, closing.enterpriseId))
      const unopened = await mintLink(platform, closing.enterpriseId)
      await adminCall(platform, 'disableEnterprise', { params: { enterpriseId: closing.enterpriseId } })
      refused(await portalCall(platform, 'GET', 'session', { cookie: inside.cookie }), 4030, /disabled/)
      assert.equal((await openLink(platform, unopened)).status, 403)
      const minting = await adminCall(platform, 'createPortalLink', {
        params: { enterpriseId: closing.enterpriseId },
        body: {},
      }).catch((error: { code: number; msg: string }) => error)
      assert.equal((minting as { code: number }).code, 4030)
    })

    test('every change made in the portal is in the audit trail with its session as actor', async () => {
      const audited = await createPartner(platform, 'Audited Co')
      const portal = await visit(platform, await mintLink(platform, audited.enterpriseId, 'manage'))
      const { endpointId } = (await portal.post('endpoints/add', { url: `${unanswered}/audited` })).body
      await portal.post('endpoints/update', { endpointId, description: 'edited' })
      const replayed = await portal.post('deliveries/replay', {
        states: ['failed', 'unconfirmed'],
        since: '2026-01-01T00:00:00Z',
      })
      assert.deepEqual(replayed.body, { replayed: 0 })
      const check = await portal.post('endpoints/check', {
        url: `${unanswered}/check`,
        callbackWithinSeconds: 1,
      })
      assert.equal(check.body.passed, false, JSON.stringify(check.body))
      const rotated = await portal.post('key/rotate')
      assert.deepEqual(Object.keys(rotated.body).sort(), ['keyVersion', 'secret'])
      await portal.post('endpoints/remove', { endpointId })

      const { rows } = await adminCall(platform, 'listAudit', {
        query: { enterprise: String(audited.enterpriseId) },
      })
      const mine = rows.filter((row) => row.actor.id === `portal-session ${portal.session.sessionId}`)
      for (const row of mine) {
        assert.deepEqual(row.actor, {
          kind: 'partner',
          id: `portal-session ${portal.session.sessionId}`,
          name: `enterprise ${audited.enterpriseId} (portal)`,
        })
        assert.equal(row.target.enterpriseId, audited.enterpriseId)
        assert.equal(JSON.stringify(row).includes(rotated.body.secret as string), false)
      }
      assert.deepEqual(mine.map((row) => row.operation).sort(), [
        'addEndpoint',
        'checkEndpoint',
        'enterPortal',
        'removeEndpoint',
        'replayDeliveries',
        'rotateKey',
        'updateEndpoint',
      ])
    })

    test('every change through the sealed partner API is in the audit trail with its token as actor', async () => {
      const sealed = await createPartner(platform, 'Sealed Co')
      const token = await sealed.token()
      const salt = token.split('.')[4]
      const call = async (path: string, plaintext: Record<string, unknown>) => {
        const reply = await sealed.call(`/openapi/v1/${path}`, plaintext as never, token)
        assert.equal(reply.body.code, 2000, `${path}: ${JSON.stringify(reply.body)}`)
        return reply.plaintext as Record<string, unknown>
      }
      const { endpointId } = await call('endpoints/add', { url: `${unanswered}/sealed` })
      await call('endpoints/update', { endpointId, eventTypes: ['recording.audio_ready'] })
      await call('deliveries/replay', { states: ['failed'], since: '2026-01-01T00:00:00Z' })
      await call('endpoints/check', { url: `${unanswered}/check`, callbackWithinSeconds: 1 })
      const link = await call('portal/link', { access: 'manage' })
      const entered = await visit(platform, link.url as string)
      assert.deepEqual(
        [entered.session.enterpriseId, entered.session.access],
        [sealed.enterpriseId, 'manage'],
      )
      await call('endpoints/remove', { endpointId })
      await call('key/rotate', {})

      const { rows } = await adminCall(platform, 'listAudit', {
        query: { enterprise: String(sealed.enterpriseId) },
      })
      const byToken = rows.filter((row) => row.actor.id === `token ${salt}`)
      for (const row of byToken) {
        assert.deepEqual(row.actor, {
          kind: 'partner',
          id: `token ${salt}`,
          name: `enterprise ${sealed.enterpriseId} (partner API)`,
        })
        assert.equal(row.outcome, 'ok')
      }
      assert.deepEqual(byToken.map((row) => row.operation).sort(), [
        'addEndpoint',
        'checkEndpoint',
        'mintPortalLink',
        'removeEndpoint',
        'replayDeliveries',
        'rotateKey',
        'updateEndpoint',
      ])
      const sessions = await adminCall(platform, 'listPortalSessions', {
        query: { enterpriseId: String(sealed.enterpriseId) },
      })
      assert.deepEqual(
        sessions.sessions.map((session) => session.mintedBy),
        [`enterprise ${sealed.enterpriseId} (partner API)`],
      )
    })
  })
}
