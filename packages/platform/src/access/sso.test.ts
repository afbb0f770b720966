import assert from 'node:assert/strict'
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import Provider from 'oidc-provider'
import { ConfigError, loadConfig } from '../config/config.js'

/*
 * Single sign-on against a real OpenID Connect provider (oidc-provider) on loopback, driven over HTTP as a
 * browser would: the platform's start, the provider's sign-in and consent pages, the redirect back. The
 * failures are real too: a state changed or used twice, an ID token the provider issued to another
 * client, a code the provider let expire.
 */

const CLIENT_ID = 'earshot-console'
const CLIENT_SECRET = 'earshot-console-secret-0123456789'
const OTHER_CLIENT = {
  id: 'other-app',
  secret: 'other-app-secret-0123456789',
  redirect: 'http://127.0.0.1:9/cb',
}
const ROLE_CLAIM = 'earshot_role'
const SCOPE_CLAIM = 'earshot_enterprises'
const ASK_AN_OWNER = /ask an owner to add you/

/** The provider's people, by the login typed at its sign-in page. */
const ACCOUNTS: Record<string, Record<string, unknown>> = {
  ada: { email: 'ada@example.com', email_verified: true, name: 'Ada Lovelace' },
  ada2: { email: 'ada2@example.com', email_verified: true, name: 'Ada Again' },
  grace: {
    email: 'grace@example.com',
    email_verified: true,
    name: 'Grace Hopper',
    [ROLE_CLAIM]: 'viewer',
    [SCOPE_CLAIM]: [7, '9'],
  },
  mallory: { email: 'mallory@example.com', email_verified: true, name: 'Mallory' },
  unverified: { email: 'unverified@example.com', email_verified: false, [ROLE_CLAIM]: 'admin' },
  frank: { email: 'frank@example.com', email_verified: true, name: 'Frank' },
  dan: { email: 'dan@example.com', email_verified: true, name: 'Dan' },
  erin: { email: 'erin@example.com', email_verified: true, name: 'Erin' },
}

/** What a test changes in the provider's behaviour, one test at a time. */
interface ProviderControls {
  /** Codes live 1 s instead of 10 minutes. */
  shortCodes: boolean
  /** The ID token the token endpoint answers instead of the one it issued. */
  substituteIdToken?: string
  /** Why the token endpoint last refused a code, as the provider tells itself. */
  lastGrantError?: string
}

interface TestProvider {
  issuer: string
  controls: ProviderControls
  /** Registers the platform's client, its redirect URI at `adminUrl`, and begins serving. */
  serveFor(adminUrl: string): void
  close(): Promise<void>
}

async function startProvider(): Promise<TestProvider> {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const controls: ProviderControls = { shortCodes: false }
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' }
  return {
    issuer,
    controls,
    serveFor(adminUrl) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            redirect_uris: [`${adminUrl}/admin/v1/sso/callback`],
          },
          {
            client_id: OTHER_CLIENT.id,
            client_secret: OTHER_CLIENT.secret,
            redirect_uris: [OTHER_CLIENT.redirect],
          },
        ],
        findAccount: (_ctx, id) => {
          const claims = ACCOUNTS[id]
          return claims && { accountId: id, claims: () => ({ sub: `sub-${id}`, ...claims }) }
        },
        claims: {
          openid: ['sub'],
          email: ['email', 'email_verified'],
          profile: ['name', ROLE_CLAIM, SCOPE_CLAIM],
        },
        cookies: { keys: [randomBytes(16).toString('hex')] },
        jwks: { keys: [signingKey as never] },
        pkce: { required: () => true },
        ttl: {
          AuthorizationCode: () => (controls.shortCodes ? 1 : 600),
          AccessToken: 600,
          IdToken: 600,
          Grant: 600,
          Interaction: 600,
          Session: 600,
        },
      })
      provider.on('grant.error', (_ctx, error: { error_detail?: string }) => {
        controls.lastGrantError = error.error_detail
      })
      provider.use(async (ctx, next) => {
        await next()
        const body = ctx.body as { id_token?: string } | undefined
        if (ctx.path === '/token' && body?.id_token && controls.substituteIdToken) {
          ctx.body = { ...body, id_token: controls.substituteIdToken }
        }
      })
      server.on('request', provider.callback())
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A browser's cookies and navigations: redirects are answered, not followed, so each can be read. */
class Browser {
  readonly cookies = new Map<string, string>()

  async open(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), ...(cookie && { cookie }) },
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim())
      const [name = '', ...value] = pair.split('=')
      const gone =
        value.join('=') === '' ||
        attributes.some((attribute) => /^max-age=0$/i.test(attribute) || /^expires=.*1970/i.test(attribute))
      if (gone) this.cookies.delete(name)
      else this.cookies.set(name, value.join('='))
    }
    return response
  }

  /** Where a navigation is redirected to. */
  async redirected(url: string | URL): Promise<URL> {
    const response = await this.open(url)
    await response.arrayBuffer()
    assert.equal(response.status, 302, `${url} answered ${response.status}`)
    return new URL(response.headers.get('location') ?? '', url)
  }
}

/**
 * Signs in at the provider as `login` from its authorization URL, through its sign-in and consent pages,
 * until it redirects to a URL beginning with `until`: that URL, not followed.
 */
async function throughProvider(browser: Browser, url: URL, login: string, until: string): Promise<URL> {
  let next = url
  let init: RequestInit = {}
  for (let step = 0; step < 16; step++) {
    const response = await browser.open(next, init)
    const location = response.headers.get('location')
    if (location) {
      await response.arrayBuffer()
      next = new URL(location, next)
      init = {}
      if (next.href.startsWith(until)) return next
      continue
    }
    const page = await response.text()
    assert.equal(response.status, 200, page)
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1]
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1]
    assert.ok(action && prompt, `no sign-in or consent form in ${page}`)
    next = new URL(action, next)
    init = {
      method: 'POST',
      body: new URLSearchParams({ prompt, ...(prompt === 'login' && { login, password: 'any' }) }),
    }
  }
  throw new Error(`the provider never redirected to ${until}`)
}

/** A sign-in begun at the platform and done at the provider: the callback URL the browser is sent to. */
async function signInAtProvider(platform: TestPlatform, login: string) {
  const browser = new Browser()
  const toProvider = await browser.redirected(`${platform.adminUrl}/admin/v1/sso/start`)
  assert.ok(browser.cookies.has('earshot_sso'), 'the start binds the sign-in to the browser')
  const callback = await throughProvider(
    browser,
    toProvider,
    login,
    `${platform.adminUrl}/admin/v1/sso/callback`,
  )
  return { browser, toProvider, callback }
}

/** The whole sign-in: where the platform's callback sends the browser. */
async function signIn(platform: TestPlatform, login: string) {
  const { browser, callback } = await signInAtProvider(platform, login)
  return { browser, landing: await browser.redirected(callback) }
}

function ssoError(landing: URL): string {
  assert.equal(landing.pathname, '/console/')
  const match = /^#sso-error=(.+)$/.exec(landing.hash)
  assert.ok(match?.[1], `no #sso-error in ${landing.href}`)
  return decodeURIComponent(match[1])
}

async function sessionOf(platform: TestPlatform, browser: Browser) {
  const response = await browser.open(`${platform.adminUrl}/admin/v1/session`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

interface Row {
  actor: { id: string; name: string }
  operation: string
  target: { operatorId?: number }
  after: Record<string, unknown> | null
  outcome: string
}

/** The newest audit row of the single sign-on callback. */
async function lastSsoRow(platform: TestPlatform): Promise<Row> {
  const { body } = await admin<{ rows: Row[] }>(platform, 'GET', '/audit?limit=20')
  const row = body.rows.find((candidate) => candidate.operation === 'ssoCallback')
  assert.ok(row, 'no ssoCallback row in the audit trail')
  return row
}

async function addOperator(platform: TestPlatform, email: string, role = 'admin') {
  const added = await admin<{ operatorId: number; setupUrl: string }>(platform, 'POST', '/operators', {
    email,
    role,
  })
  assert.equal(added.status, 201, JSON.stringify(added.body))
  return added.body
}

async function operatorNamed(platform: TestPlatform, email: string) {
  const { body } = await admin<{ operators: { email: string; sso: boolean; setUp: boolean }[] }>(
    platform,
    'GET',
    '/operators',
  )
  return body.operators.find((operator) => operator.email === email)
}

/** An ID token the provider issues to the other client, for the same person and nonce. */
async function otherClientsIdToken(provider: TestProvider, login: string, nonce: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url')
  const authorize = new URL(`${provider.issuer}/auth`)
  authorize.search = new URLSearchParams({
    client_id: OTHER_CLIENT.id,
    response_type: 'code',
    scope: 'openid email profile',
    redirect_uri: OTHER_CLIENT.redirect,
    state: 'other-state',
    nonce,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString()
  const back = await throughProvider(new Browser(), authorize, login, OTHER_CLIENT.redirect)
  const response = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${OTHER_CLIENT.id}:${OTHER_CLIENT.secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code') ?? '',
      redirect_uri: OTHER_CLIENT.redirect,
      code_verifier: verifier,
    }),
  })
  const tokens = (await response.json()) as { id_token: string }
  assert.equal(response.status, 200, JSON.stringify(tokens))
  const payload = JSON.parse(Buffer.from(tokens.id_token.split('.')[1] ?? '', 'base64url').toString())
  assert.equal(payload.aud, OTHER_CLIENT.id)
  return tokens.id_token
}

for (const backend of testBackends) {
  describe(`single sign-on through an OpenID Connect provider (${backend})`, { timeout: 120_000 }, () => {
    let provider: TestProvider
    let platform: TestPlatform

    before(async () => {
      provider = await startProvider()
      platform = await startTestPlatform(backend, {
        pushDispatch: false,
        oidcIssuer: provider.issuer,
        oidcClientId: CLIENT_ID,
        oidcClientSecret: CLIENT_SECRET,
        oidcRoleClaim: ROLE_CLAIM,
        oidcScopeClaim: SCOPE_CLAIM,
      })
      // The platform discovers the provider on the first sign-in, so it may begin serving after it starts.
      provider.serveFor(platform.adminUrl)
    })
    after(async () => {
      await platform?.stop()
      await provider?.close()
    })

    test('the console is told single sign-on is on, and by which provider', async () => {
      const response = await fetch(`${platform.adminUrl}/admin/v1/sso`)
      assert.equal(response.status, 200)
      assert.deepEqual(await response.json(), { enabled: true, issuer: provider.issuer })
    })

    test('an operator an owner added signs in by their verified email, then by their account', async () => {
      const added = await addOperator(platform, 'ada@example.com', 'admin')
      const { browser, landing } = await signIn(platform, 'ada')
      assert.equal(landing.href, `${platform.adminUrl}/console/`)
      const session = await sessionOf(platform, browser)
      assert.equal(session.status, 200, JSON.stringify(session.body))
      assert.deepEqual(session.body.actor, {
        kind: 'operator',
        id: `operator:${added.operatorId}`,
        name: 'Ada Lovelace',
      })
      assert.equal(session.body.role, 'admin')
      assert.equal(session.body.enterprises, null)
      assert.equal(typeof session.body.csrfToken, 'string')
      const operator = await operatorNamed(platform, 'ada@example.com')
      assert.equal(operator?.sso, true)
      assert.equal(operator?.setUp, true)
      const row = await lastSsoRow(platform)
      assert.equal(row.outcome, 'ok')
      assert.equal(row.actor.id, `operator:${added.operatorId}`)
      assert.deepEqual(row.after, { firstSignIn: 'linked by verified email' })
      // Set up by the sign-in, the setup link the owner was given opens nothing any more.
      const token = new URL(added.setupUrl).hash.replace('#setup=', '')
      const setup = await fetch(`${platform.adminUrl}/admin/v1/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token, password: 'a long enough password 123' }),
      })
      assert.equal(setup.status, 404)
      await setup.arrayBuffer()

      // Again, in another browser: by the account now linked.
      const again = await signIn(platform, 'ada')
      assert.equal(again.landing.pathname, '/console/')
      assert.equal(again.landing.hash, '')
      assert.equal((await sessionOf(platform, again.browser)).body.role, 'admin')
      assert.equal((await lastSsoRow(platform)).after, null)
    })

    test('a person the platform does not know gets the role and enterprises their claims name', async () => {
      const { browser, landing } = await signIn(platform, 'grace')
      assert.equal(landing.hash, '')
      const session = await sessionOf(platform, browser)
      assert.equal(session.status, 200, JSON.stringify(session.body))
      assert.equal(session.body.role, 'viewer')
      assert.deepEqual(session.body.enterprises, [7, 9])
      assert.equal((session.body.actor as { name: string }).name, 'Grace Hopper')
      const row = await lastSsoRow(platform)
      assert.equal(row.outcome, 'ok')
      assert.deepEqual(row.after, { firstSignIn: 'role from claim', role: 'viewer', enterprises: [7, 9] })
      const operator = await operatorNamed(platform, 'grace@example.com')
      assert.equal(operator?.sso, true)
      assert.equal(operator?.setUp, true)
    })

    test('a person with no operator and no role claim is refused and told to ask an owner', async () => {
      const { browser, landing } = await signIn(platform, 'mallory')
      assert.match(ssoError(landing), ASK_AN_OWNER)
      assert.equal(browser.cookies.has('earshot_session'), false)
      assert.equal((await sessionOf(platform, browser)).status, 401)
      const row = await lastSsoRow(platform)
      assert.equal(row.outcome, 'refused')
      assert.deepEqual(row.actor, { kind: 'operator', id: 'unknown', name: 'mallory@example.com' })
      assert.equal(await operatorNamed(platform, 'mallory@example.com'), undefined)

      // A role claim does not make an operator of an email the provider has not verified.
      const unverified = await signIn(platform, 'unverified')
      assert.match(ssoError(unverified.landing), /no verified email/)
      assert.equal(await operatorNamed(platform, 'unverified@example.com'), undefined)
    })

    test("a state changed, another browser's, or used before signs nobody in", async () => {
      await addOperator(platform, 'frank@example.com')
      const { browser, callback } = await signInAtProvider(platform, 'frank')
      const state = callback.searchParams.get('state') ?? ''

      // The link sent to another browser (a login CSRF): that browser did not begin this sign-in.
      const elsewhere = new Browser()
      assert.match(ssoError(await elsewhere.redirected(callback)), /expired or was already used/)
      assert.equal(
        (await lastSsoRow(platform)).after?.reason,
        'the state is not the one this browser began with',
      )

      const tampered = new URL(callback)
      tampered.searchParams.set('state', `${state.slice(0, -2)}xx`)
      assert.match(ssoError(await browser.redirected(tampered)), /expired or was already used/)
      assert.equal((await lastSsoRow(platform)).outcome, 'refused')
      assert.equal(browser.cookies.has('earshot_sso'), false, 'the state cookie is spent by any callback')

      // The sign-in itself was not spent by the refusals.
      browser.cookies.set('earshot_sso', state)
      assert.equal((await browser.redirected(callback)).href, `${platform.adminUrl}/console/`)
      assert.equal((await sessionOf(platform, browser)).status, 200)

      // Replayed, cookie and all, it is refused: a state is used once.
      const replay = new Browser()
      replay.cookies.set('earshot_sso', state)
      assert.match(ssoError(await replay.redirected(callback)), /expired or was already used/)
      const row = await lastSsoRow(platform)
      assert.equal(row.outcome, 'refused')
      assert.equal(row.after?.reason, 'the state is unknown, used or expired')
    })

    test('an ID token the provider issued to another client is refused', async () => {
      await addOperator(platform, 'dan@example.com')
      const { browser, toProvider, callback } = await signInAtProvider(platform, 'dan')
      // Same person, same nonce, same provider and key: only the audience differs.
      const nonce = toProvider.searchParams.get('nonce') ?? ''
      provider.controls.substituteIdToken = await otherClientsIdToken(provider, 'dan', nonce)
      let landing: URL
      try {
        landing = await browser.redirected(callback)
      } finally {
        provider.controls.substituteIdToken = undefined
      }
      assert.match(ssoError(landing), /could not be verified/)
      assert.equal((await sessionOf(platform, browser)).status, 401)
      const row = await lastSsoRow(platform)
      assert.equal(row.outcome, 'refused')
      assert.match(String(row.after?.reason), /"aud"/)
      assert.equal((await operatorNamed(platform, 'dan@example.com'))?.sso, false)
    })

    test('a code that expired at the provider is refused', async () => {
      await addOperator(platform, 'erin@example.com')
      provider.controls.shortCodes = true
      let signedIn: Awaited<ReturnType<typeof signInAtProvider>>
      try {
        signedIn = await signInAtProvider(platform, 'erin')
      } finally {
        provider.controls.shortCodes = false
      }
      // The code was issued by this second at the latest, for 1 s: wait until the provider's clock passes it.
      const issuedBy = Math.floor(Date.now() / 1000)
      await eventually(async () => Math.floor(Date.now() / 1000) >= issuedBy + 1, 5000, 'the code to expire')
      const landing = await signedIn.browser.redirected(signedIn.callback)
      assert.match(ssoError(landing), /refused the sign-in code/)
      assert.equal((await sessionOf(platform, signedIn.browser)).status, 401)
      const row = await lastSsoRow(platform)
      assert.equal(row.outcome, 'refused')
      assert.match(String(row.after?.reason), /^invalid_grant/)
      assert.match(provider.controls.lastGrantError ?? '', /authorization code (is expired|not found)/)
    })
  })
}

describe('single sign-on settings', { timeout: 60_000 }, () => {
  const complete = {
    EARSHOT_OIDC_ISSUER: 'https://login.example.com',
    EARSHOT_OIDC_CLIENT_ID: 'earshot',
    EARSHOT_OIDC_CLIENT_SECRET: 'a-secret-never-shown',
  }

  test('the issuer, client id and secret go together; the claims need them', () => {
    const config = loadConfig({ ...complete, EARSHOT_OIDC_ROLE_CLAIM: 'roles' })
    assert.equal(config.oidcIssuer, 'https://login.example.com')
    assert.equal(config.oidcRoleClaim, 'roles')
    assert.equal(loadConfig({}).oidcIssuer, undefined)
    assert.throws(
      () => loadConfig({ EARSHOT_OIDC_ISSUER: complete.EARSHOT_OIDC_ISSUER }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /go together .*EARSHOT_OIDC_CLIENT_ID and EARSHOT_OIDC_CLIENT_SECRET are missing/.test(error.message),
    )
    assert.throws(
      () => loadConfig({ EARSHOT_OIDC_SCOPE_CLAIM: 'enterprises' }),
      /EARSHOT_OIDC_SCOPE_CLAIM is set, but single sign-on is not/,
    )
  })

  test('the issuer is https, or http on loopback; the secret is never echoed', () => {
    for (const issuer of ['http://127.0.0.1:9000', 'http://localhost:9000/realms/x', 'http://[::1]:9000']) {
      assert.equal(loadConfig({ ...complete, EARSHOT_OIDC_ISSUER: issuer }).oidcIssuer, issuer)
    }
    for (const issuer of [
      'http://login.example.com',
      'https://login.example.com/?x=1',
      'login.example.com',
    ]) {
      assert.throws(
        () => loadConfig({ ...complete, EARSHOT_OIDC_ISSUER: issuer }),
        /EARSHOT_OIDC_ISSUER must be an https:\/\/ URL \(http:\/\/ only on loopback\)/,
      )
    }
    assert.throws(
      () => loadConfig({}, { oidcClientSecret: '' }),
      (error: unknown) =>
        error instanceof ConfigError && /--oidc-client-secret must be .*\(hidden\)/.test(error.message),
    )
    assert.throws(
      () => loadConfig({ EARSHOT_OIDC_CLIENT_SECRET: complete.EARSHOT_OIDC_CLIENT_SECRET }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /EARSHOT_OIDC_ISSUER and EARSHOT_OIDC_CLIENT_ID are missing/.test(error.message) &&
        !error.message.includes(complete.EARSHOT_OIDC_CLIENT_SECRET),
    )
  })

  test('without them the console offers no single sign-on, and its routes say so', async () => {
    const platform = await startTestPlatform('pglite', { pushDispatch: false })
    try {
      const sso = await fetch(`${platform.adminUrl}/admin/v1/sso`)
      assert.deepEqual(await sso.json(), { enabled: false })
      const start = await fetch(`${platform.adminUrl}/admin/v1/sso/start`, { redirect: 'manual' })
      assert.equal(start.status, 404)
      assert.match(((await start.json()) as { msg: string }).msg, /EARSHOT_OIDC_ISSUER/)
    } finally {
      await platform.stop()
    }
  })
})
