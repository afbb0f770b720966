import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { createRequire } from 'node:module'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { PORTAL_PAGE_POLICY } from './portal-page.js'

/**
 * The portal's page on the partner listener: served without a session (the page asks for it), under a
 * policy that allows this origin alone (the page a spent link answers with too), revalidated by its ETag, its modules all served (the console's it
 * shares among them) and uPlot from its package; no other path reaches a file.
 */

/** A GET of the path as written: fetch would resolve its dot segments before sending it. */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(base, { path }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        body += chunk
      })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

const POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

describe('the portal page', { timeout: 60_000 }, () => {
  let platform: TestPlatform

  before(async () => {
    platform = await startTestPlatform('pglite')
  })

  after(async () => {
    await platform?.stop()
  })

  test('the page is served at /portal/ to anyone: the session is asked for by the page itself', async () => {
    for (const path of ['/portal', '/portal/', '/portal/index.html']) {
      const page = await fetch(`${platform.partnerUrl}${path}`)
      assert.equal(page.status, 200, path)
      assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8')
      assert.equal(page.headers.get('content-security-policy'), POLICY)
      assert.match(await page.text(), /<script type="module" src="\/portal\/portal.js"><\/script>/)
    }
  })

  test('the page a spent link answers with is under the policy the page is served with', async () => {
    assert.equal(PORTAL_PAGE_POLICY, POLICY)
    const refused = await fetch(`${platform.partnerUrl}/portal/enter/ptl_never-minted`)
    assert.equal(refused.status, 403)
    assert.equal(refused.headers.get('content-security-policy'), POLICY)
  })

  test('the assets: their types, this origin alone, revalidation; nothing else is a file', async () => {
    const types = {
      'portal.js': 'text/javascript; charset=utf-8',
      'uplot.js': 'text/javascript; charset=utf-8',
      'portal.css': 'text/css; charset=utf-8',
      'console.css': 'text/css; charset=utf-8',
      'uplot.css': 'text/css; charset=utf-8',
    }
    for (const [name, type] of Object.entries(types)) {
      const response = await fetch(`${platform.partnerUrl}/portal/${name}`)
      assert.equal(response.status, 200, name)
      assert.equal(response.headers.get('content-type'), type)
      assert.equal(response.headers.get('cache-control'), 'no-cache')
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(response.headers.get('content-security-policy'), POLICY)
      const etag = response.headers.get('etag') as string
      assert.ok((await response.text()).length > 100)
      const again = await fetch(`${platform.partnerUrl}/portal/${name}`, {
        headers: { 'if-none-match': etag },
      })
      assert.equal(again.status, 304)
    }
    for (const path of [
      '/portal/../package.json',
      '/portal/%2e%2e/package.json',
      '/portal/..%2fpackage.json',
      '/portal/portal-page.js',
      '/portal/admin-api.js',
      '/portal/nope.js',
    ]) {
      const response = await rawGet(platform.partnerUrl, path)
      assert.equal(response.status, 404, path)
      assert.equal((JSON.parse(response.body) as { code: number }).code, 4040, path)
    }
  })

  test('uPlot is served from its package, never fetched from elsewhere', async () => {
    const file = createRequire(import.meta.url).resolve('uplot/dist/uPlot.esm.js')
    const served = await (await fetch(`${platform.partnerUrl}/portal/uplot.js`)).text()
    assert.equal(served, readFileSync(file, 'utf8'))
    const page = await (await fetch(`${platform.partnerUrl}/portal/`)).text()
    assert.doesNotMatch(page, /https?:\/\//, 'the page names no other origin')
  })

  test('every module the page imports is served, from the shell down', async () => {
    const seen = new Set<string>()
    const pending = ['portal.js']
    for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
      if (seen.has(name)) continue
      seen.add(name)
      const response = await fetch(`${platform.partnerUrl}/portal/${name}`)
      assert.equal(response.status, 200, name)
      assert.equal(response.headers.get('content-type'), 'text/javascript; charset=utf-8', name)
      for (const [, imported] of (await response.text()).matchAll(/from '\.\/([\w-]+\.js)'/g)) {
        pending.push(imported as string)
      }
    }
    for (const name of [
      'dom.js',
      'endpoint-fields.js',
      'endpoint-table.js',
      'check-report.js',
      'uplot.js',
      'page-constants.js',
    ]) {
      assert.ok(seen.has(name), `${name} among ${[...seen].join(', ')}`)
    }
  })
})
