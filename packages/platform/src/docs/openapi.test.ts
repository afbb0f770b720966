import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { loadKey, seal } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { admin, createPartner, ingest, postJson, type TestPartner } from '@earshot/test-kit/calls'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Compile } from 'typebox/compile'
import type { RouteSummary } from '../http/create-server.js'

/*
 * Both listeners' OpenAPI documents (docs/): valid OpenAPI 3.1, every route the listeners register in
 * them and nothing else, their answers as documented, and the reference pages served with their assets.
 * The documents do not depend on the storage backend, so this runs on PGlite only.
 */

type Json = Record<string, unknown>
type Listener = 'partner' | 'admin'

/**
 * Served beside the APIs but not part of them: the documents and pages themselves, the console, and the
 * portal's page with its files (/portal/NAME; its JSON routes and links, a level deeper, are documented).
 */
const UNDOCUMENTED = /^\/(openapi\.json|docs|console)(\/|$)|^\/portal(\/[^/]*)?$/

const recording = (audioId: string) => ({
  audioId,
  deviceUid: 'dev-docs',
  title: `Docs ${audioId}`,
  recordedAt: '2026-05-01T08:00:00+08:00',
  denoiseUrl: `https://cdn.example/${audioId}.mp3`,
  recordDuration: 1200,
})
const transcript = {
  transcriptId: 7,
  transcriptText: 'hello there',
  sentences: [{ text: 'hello there', beginTime: 0, endTime: 900 }],
  durationMs: 900,
  wordsCount: 2,
}

describe('OpenAPI documents and reference pages', { timeout: 60_000 }, () => {
  let platform: TestPlatform
  const documents = {} as Record<Listener, Json>
  const urlOf = (listener: Listener) => (listener === 'partner' ? platform.partnerUrl : platform.adminUrl)

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    for (const listener of ['partner', 'admin'] as const) {
      // No token: the admin listener serves its document to anyone who can reach it.
      const response = await fetch(`${urlOf(listener)}/openapi.json`)
      assert.equal(response.status, 200)
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
      documents[listener] = (await response.json()) as Json
    }
  })
  after(async () => {
    await platform?.stop()
  })

  /** The schema an operation documents for an answer, its $refs resolved. */
  function answerSchema(
    listener: Listener,
    method: string,
    path: string,
    status: number,
    type = 'application/json',
  ) {
    const document = documents[listener]
    const operation = ((document.paths as Json)[path] as Json | undefined)?.[method] as Json | undefined
    assert.ok(operation, `${listener}: ${method.toUpperCase()} ${path} is not documented`)
    const answer = (operation.responses as Json)[String(status)] as Json | undefined
    assert.ok(answer, `${listener}: ${method.toUpperCase()} ${path} documents no ${status} answer`)
    const media = (answer.content as Json | undefined)?.[type] as Json | undefined
    assert.ok(media, `${listener}: ${method.toUpperCase()} ${path} ${status} documents no ${type} body`)
    return resolved(document, media.schema)
  }

  /** Asserts that a real answer is what the document says it is. */
  function expectDocumented(
    listener: Listener,
    method: string,
    path: string,
    reply: { status: number; body: unknown },
  ): void {
    const schema = answerSchema(listener, method, path, reply.status)
    const check = Compile(schema as never)
    assert.ok(
      check.Check(reply.body),
      `${method.toUpperCase()} ${path} ${reply.status} is not as documented: ${JSON.stringify(reply.body)}\n` +
        JSON.stringify([...check.Errors(reply.body)].slice(0, 3)),
    )
  }

  test('both documents are valid OpenAPI 3.1', async () => {
    for (const listener of ['partner', 'admin'] as const) {
      const validator = new Validator()
      const result = await validator.validate(documents[listener])
      assert.equal(validator.version, '3.1')
      assert.ok(result.valid, `${listener}: ${JSON.stringify(result.errors, null, 2)}`)
    }
  })

  test('every route a listener registers is documented, and every documented operation is a route', () => {
    for (const listener of ['partner', 'admin'] as const) {
      const served = platform.routes[listener]
        .filter((route) => route.method !== 'HEAD' && !UNDOCUMENTED.test(route.url))
        .map(operationKey)
      const paths = documents[listener].paths as Record<string, Json>
      const documented = Object.entries(paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((key) => ['get', 'put', 'post', 'delete', 'patch'].includes(key))
          .map((method) => `${method.toUpperCase()} ${path}`),
      )
      assert.ok(served.length >= (listener === 'partner' ? 6 : 20), `${listener}: ${served.join(', ')}`)
      assert.deepEqual(
        served.filter((route) => !documented.includes(route)),
        [],
        `${listener}: routes missing from docs/${listener}-document.ts`,
      )
      assert.deepEqual(
        documented.filter((operation) => !served.includes(operation)),
        [],
        `${listener}: documented but not served`,
      )
    }
  })

  test('the error catalogue is one component: every code with its name, meaning and HTTP status', () => {
    for (const listener of ['partner', 'admin'] as const) {
      const codes = ((documents[listener].components as Json).schemas as Json).ResponseCode as Json
      const entries = codes.oneOf as { const: number; title: string; description: string }[]
      assert.deepEqual(
        entries.map((entry) => entry.const),
        [
          2000, 4000, 4001, 4010, 4011, 4012, 4030, 4031, 4040, 4080, 4090, 4130, 4140, 4150, 4290, 5000,
          5030,
        ],
      )
      for (const entry of entries) {
        assert.ok(entry.title.length > 0)
        assert.ok(entry.description.endsWith(`(HTTP ${Math.floor(entry.const / 10)})`), entry.description)
      }
    }
  })

  test('partner bodies are envelopes; each plaintext is a named component marked sealed', () => {
    const document = documents.partner
    const schemas = (document.components as Json).schemas as Record<string, Json>
    const sealed = Object.keys(schemas).filter((name) => schemas[name]?.['x-earshot-sealed'] === true)
    for (const name of [
      'TokenPlaintext',
      'RecordingFilter',
      'RecordingList',
      'TranscriptRecordingData',
      'AudioRecordingData',
      'CallbackPlaintext',
      'PushEvent',
      'ChangesRequest',
      'ChangePage',
    ]) {
      assert.ok(sealed.includes(name), `${name} is not a sealed component`)
    }
    const bodies: [string, string, string][] = [
      ['/openapi/v1/token', 'TokenRequest', 'TokenPlaintext'],
      ['/openapi/v1/audios', 'SealedRecordingFilter', 'RecordingFilter'],
      ['/openapi/v1/audios/changes', 'SealedChangesRequest', 'ChangesRequest'],
      ['/openapi/v1/callback', 'SealedCallbackPlaintext', 'CallbackPlaintext'],
    ]
    for (const [path, body, plaintext] of bodies) {
      const operation = ((document.paths as Json)[path] as Json).post as Json
      const content = (operation.requestBody as Json).content as Json
      assert.deepEqual((content['application/json'] as Json).schema, { $ref: `#/components/schemas/${body}` })
      assert.equal(schemas[body]?.['x-earshot-plaintext'], `#/components/schemas/${plaintext}`)
      // The body is the envelope: its schema accepts a sealed request.
      const envelope = seal(loadKey('k'.repeat(32)), 1, 'evt-1', {})
      assert.ok(Compile(resolved(document, schemas[body]) as never).Check({ ...envelope, enterpriseId: 1 }))
    }
  })

  test('partner answers are as documented, sealed data opening to the named plaintext', async () => {
    const partner: TestPartner = await createPartner(platform, 'Documented Co')
    await ingest(platform, partner.enterpriseId, { ...recording('docs-1'), transcript })
    await ingest(platform, partner.enterpriseId, recording('docs-2'))
    const tokenReply = await postJson(platform, '/openapi/v1/token', {
      ...seal(partner.key, partner.keyVersion, 'evt-docs-token', {}),
      enterpriseId: partner.enterpriseId,
    })
    expectDocumented('partner', 'post', '/openapi/v1/token', tokenReply)
    const token = (tokenReply.body.data as { accessToken: string }).accessToken

    const plaintextOf = (name: string) =>
      Compile(resolved(documents.partner, { $ref: `#/components/schemas/${name}` }) as never)
    const query = await partner.call('/openapi/v1/audios', { size: 10 }, token)
    expectDocumented('partner', 'post', '/openapi/v1/audios', query)
    assert.equal((query.plaintext as { items: unknown[] }).items.length, 2)
    assert.ok(plaintextOf('RecordingList').Check(query.plaintext))
    const changes = await partner.call('/openapi/v1/audios/changes', {}, token)
    expectDocumented('partner', 'post', '/openapi/v1/audios/changes', changes)
    assert.ok(plaintextOf('ChangePage').Check(changes.plaintext))
    expectDocumented(
      'partner',
      'post',
      '/openapi/v1/callback',
      await partner.call('/openapi/v1/callback', { audioId: 'docs-1' }, token),
    )
    const unknown = await partner.call('/openapi/v1/callback', { audioId: 'nowhere' }, token)
    assert.equal(unknown.status, 404)
    expectDocumented('partner', 'post', '/openapi/v1/callback', unknown)
    const refused = await partner.call('/openapi/v1/audios', { size: 101 }, token)
    assert.equal(refused.status, 400)
    expectDocumented('partner', 'post', '/openapi/v1/audios', refused)
    const noToken = await postJson(platform, '/openapi/v1/audios', seal(partner.key, 1, 'evt-docs-x', {}))
    expectDocumented('partner', 'post', '/openapi/v1/audios', noToken)
    for (const path of ['/healthz', '/readyz']) {
      const response = await fetch(`${platform.partnerUrl}${path}`)
      expectDocumented('partner', 'get', path, { status: response.status, body: await response.json() })
    }
  })

  test('admin answers are as documented', async () => {
    const call = async (method: string, path: string, body?: unknown) => {
      const reply = await admin(platform, method, path, body)
      expectDocumented('admin', method.toLowerCase(), documentedPath(`/admin/v1${path}`), reply)
      return reply
    }
    const created = await call('POST', '/enterprises', {
      name: 'Admin Docs',
      pushUrl: 'http://127.0.0.1:9/push',
    })
    const id = (created.body as { enterpriseId: number }).enterpriseId
    await call('POST', '/enterprises', { name: '' })
    await call('GET', '/enterprises')
    await call('POST', `/enterprises/${id}/recordings`, recording('adm-docs-1'))
    await call('POST', `/enterprises/${id}/recordings`, { ...recording('adm-docs-2'), title: 7 })
    await call('PUT', `/enterprises/${id}/recordings/adm-docs-1/transcript`, transcript)
    await call('PATCH', `/enterprises/${id}/recordings/adm-docs-1`, { title: 'Renamed' })
    await call('DELETE', `/enterprises/${id}/recordings/adm-docs-1`)
    await call('DELETE', `/enterprises/${id}/recordings/adm-docs-1`)

    const listed = await call('GET', `/deliveries?enterpriseId=${id}&limit=10`)
    const [delivery] = (listed.body as { deliveries: { deliveryId: number }[] }).deliveries
    assert.ok(delivery, 'the recording made deliveries')
    await call('GET', '/deliveries?page=2')
    await call('GET', `/deliveries/${delivery.deliveryId}`)
    // As a dispatcher would take it: claimed, then failed for good.
    for (const [state, due] of [
      ['in_flight', 'now()'],
      ['failed', 'NULL'],
    ]) {
      await platform.context.db.query(
        `UPDATE deliveries SET state = $2, due_at = ${due} WHERE delivery_id = $1`,
        [delivery.deliveryId, state],
      )
    }
    await call('POST', `/deliveries/${delivery.deliveryId}/replay`)
    await call('POST', `/deliveries/${delivery.deliveryId}/replay`)
    await call('POST', `/deliveries/${delivery.deliveryId}/cancel`)
    await call('POST', `/deliveries/${delivery.deliveryId}/cancel`)
    await call('POST', `/enterprises/${id}/deliveries/replay`, {
      from: '2026-01-01T00:00:00Z',
      to: '2099-01-01T00:00:00Z',
    })
    await call('POST', `/enterprises/${id}/deliveries/replay-unreceipted`, {
      since: '2026-01-01T00:00:00Z',
      dryRun: true,
    })
    await call('POST', `/enterprises/${id}/deliveries/replay-unreceipted`, { since: '2026-01-01T00:00:00Z' })
    await call('GET', '/push-urls')
    await call('GET', '/overview')
    await call('GET', `/delivery-log?enterpriseId=${id}&limit=1`)
    await call(
      'GET',
      `/enterprises/${id}/deliveries/replayable?from=2026-01-01T00:00:00Z&to=2099-01-01T00:00:00Z`,
    )
    await call('POST', '/push-urls/enable', { url: 'https://nobody.example/push' })
    await call('PUT', `/enterprises/${id}/push-url`, { pushUrl: null })
    await call('POST', `/enterprises/${id}/rotate-key`)
    await call('POST', `/enterprises/${id}/disable`)
    await call('POST', '/enterprises/999999/disable')

    // The import answers JSON Lines, each line documented.
    const lines = `${JSON.stringify(recording('adm-docs-3'))}\n${JSON.stringify(recording('adm-docs-4'))}\n`
    const other = await admin<{ enterpriseId: number }>(platform, 'POST', '/enterprises', {
      name: 'Importer',
    })
    const response = await fetch(
      `${platform.adminUrl}/admin/v1/enterprises/${other.body.enterpriseId}/recordings/import`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
        body: lines,
      },
    )
    assert.equal(response.status, 200)
    const importPath = '/admin/v1/enterprises/{enterpriseId}/recordings/import'
    const lineSchema = answerSchema('admin', 'post', importPath, 200, 'application/x-ndjson')
    assert.deepEqual(lineSchema, { type: 'string', description: 'one ImportLine per line' })
    const lineCheck = Compile(resolved(documents.admin, { $ref: '#/components/schemas/ImportLine' }) as never)
    const answered = (await response.text())
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown)
    assert.deepEqual(answered.at(-1), { imported: 2, skipped: 0 })
    for (const line of answered) assert.ok(lineCheck.Check(line), JSON.stringify(line))

    for (const path of ['/healthz', '/metrics']) {
      const reply = await fetch(`${platform.adminUrl}${path}`, {
        headers: { authorization: `Bearer ${platform.adminToken}` },
      })
      assert.equal(reply.status, 200)
      const type = path === '/metrics' ? 'text/plain' : 'application/json'
      assert.ok((reply.headers.get('content-type') ?? '').startsWith(type))
      answerSchema('admin', 'get', path, 200, type)
      if (path === '/healthz')
        expectDocumented('admin', 'get', path, { status: 200, body: await reply.json() })
      else await reply.text()
    }
    const unauthorized = await fetch(`${platform.adminUrl}/admin/v1/enterprises`)
    expectDocumented('admin', 'get', '/admin/v1/enterprises', {
      status: unauthorized.status,
      body: await unauthorized.json(),
    })
  })

  test('/docs renders each document with Swagger UI served by the listener itself', async () => {
    for (const listener of ['partner', 'admin'] as const) {
      const page = await fetch(`${urlOf(listener)}/docs`)
      assert.equal(page.status, 200)
      assert.match(page.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/)
      assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/)
      const html = await page.text()
      assert.match(
        html,
        new RegExp(`<title>${(documents[listener].info as { title: string }).title} reference`),
      )
      // Nothing from elsewhere: the page's files are this listener's (and its icon is empty).
      const links = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string)
      const assets = links.filter((link) => link !== 'data:,')
      assert.deepEqual(assets.sort(), [
        '/docs/reference.js',
        '/docs/swagger-ui-bundle.js',
        '/docs/swagger-ui.css',
      ])
      const types: Record<string, RegExp> = { css: /^text\/css/, js: /^text\/javascript/ }
      for (const asset of assets) {
        const response = await fetch(`${urlOf(listener)}${asset}`)
        assert.equal(response.status, 200, asset)
        assert.match(
          response.headers.get('content-type') ?? '',
          types[asset.split('.').at(-1) as string] as RegExp,
        )
        const body = await response.text()
        assert.ok(body.length > 0)
        if (asset === '/docs/reference.js') {
          assert.match(body, /url: '\/openapi\.json'/)
          assert.match(body, /validatorUrl: null/)
        }
        // Revalidated by ETag: unchanged assets are not sent again.
        const again = await fetch(`${urlOf(listener)}${asset}`, {
          headers: { 'if-none-match': response.headers.get('etag') ?? '' },
        })
        assert.equal(again.status, 304)
      }
    }
  })
})

/** A registered route as the documents write it: `POST /admin/v1/enterprises/{enterpriseId}/disable`. */
function operationKey(route: RouteSummary): string {
  return `${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`
}

/** A request path as its documented template: ids become the parameters the routes name. */
function documentedPath(path: string): string {
  return path
    .split('?')[0]
    ?.replace(/^\/admin\/v1\/enterprises\/[^/]+/, '/admin/v1/enterprises/{enterpriseId}')
    .replace(/\/recordings\/(?!import$)[^/]+/, '/recordings/{audioId}')
    .replace(/^\/admin\/v1\/deliveries\/\d+/, '/admin/v1/deliveries/{deliveryId}') as string
}

/** A schema with every $ref into the document replaced by what it points at. */
function resolved(document: Json, schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((each) => resolved(document, each))
  if (typeof schema !== 'object' || schema === null) return schema
  const { $ref, ...rest } = schema as Json
  if (typeof $ref === 'string') {
    const target = $ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, step) => (node as Json)[step], document)
    return resolved(document, { ...(target as Json), ...rest })
  }
  return Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, resolved(document, value)]))
}
