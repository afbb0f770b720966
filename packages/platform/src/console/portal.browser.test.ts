import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { missingChromium, openConsolePage, signInWithKey } from '@earshot/test-kit/chromium'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'
import { visit } from '../portal/portal-visit.test.support.js'

/*
 * The console's portal controls in Chromium: on the enterprises screen a manage link minted and shown to
 * copy (it opens the portal once), "See what the partner sees" opening an operator's read-only view in a
 * new tab, and the enterprise's portal sessions listed, one ended. The portal's own page is not what this
 * tests: only that the new tab went through the link. PGlite only: the pages do not depend on the backend.
 */

describe('console portal controls in Chromium', { skip: missingChromium, timeout: 120_000 }, () => {
  let platform: TestPlatform
  let admin: AdminClient
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let enterpriseId = 0
  const consoleErrors: string[] = []

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    admin = new AdminClient(platform.adminUrl, platform.adminToken)
    enterpriseId = (await admin.createEnterprise('Portal Console Co')).enterpriseId
    ;({ browser, context, page } = await openConsolePage(consoleErrors))
  })
  afterEach(() => {
    assert.deepEqual(consoleErrors.splice(0), [], 'the pages logged no error')
  })
  after(async () => {
    await browser?.close()
    await platform?.stop()
  })

  test('a manage link minted on the enterprises screen is shown to copy, and opens the portal once', async () => {
    await page.goto(`${platform.adminUrl}/console#/enterprises`)
    await signInWithKey(page, platform.adminToken)
    await page.getByRole('heading', { level: 1, name: 'Enterprises' }).waitFor()
    await page.locator('summary', { hasText: /^Portal$/ }).click()
    await page.getByLabel(`Portal access for enterprise ${enterpriseId}`).selectOption('manage')
    await page.getByRole('button', { name: 'Portal link', exact: true }).click()
    const shown = page.locator('#portal-link')
    await shown.waitFor()
    const url = await shown.inputValue()
    assert.match(url, /\/portal\/enter\/ptl_[A-Za-z0-9_-]{43}$/)
    await page.getByText(`A manage link into the portal of enterprise ${enterpriseId}`).waitFor()
    const entered = await visit(platform, url)
    assert.deepEqual([entered.session.enterpriseId, entered.session.access], [enterpriseId, 'manage'])
  })

  test('"See what the partner sees" opens a read-only view in a new tab', async () => {
    const opened = context.waitForEvent('page')
    await page
      .getByRole('button', { name: `See what the partner of enterprise ${enterpriseId} sees` })
      .click()
    const tab = await opened
    await tab.waitForURL((address) => address.pathname === '/portal/')
    await page.getByRole('status').getByRole('link', { name: 'Open it' }).waitFor()
    const { sessions } = await admin.call('listPortalSessions', {
      query: { enterpriseId: String(enterpriseId) },
    })
    const look = sessions.find((session) => session.operatorView)
    assert.deepEqual([look?.access, look?.endedAt], ['view', null])
    await tab.close()
  })

  test("the enterprise's portal sessions are listed, and one is ended", async () => {
    await page.getByRole('link', { name: `Portal sessions of enterprise ${enterpriseId}` }).click()
    await page
      .getByRole('heading', { level: 1, name: `Portal sessions of enterprise ${enterpriseId}` })
      .waitFor()
    const { sessions } = await admin.call('listPortalSessions', {
      query: { enterpriseId: String(enterpriseId) },
    })
    assert.equal(sessions.length, 2)
    for (const session of sessions) await page.locator(`#portal-session-${session.sessionId}`).waitFor()
    const manage = sessions.find((session) => !session.operatorView) as (typeof sessions)[number]
    await page.getByRole('button', { name: `End portal session ${manage.sessionId}` }).click()
    const dialog = page.getByRole('dialog', { name: `End portal session ${manage.sessionId}?` })
    await dialog.getByRole('button', { name: 'End' }).click()
    await page.getByRole('status').getByText(`Portal session ${manage.sessionId} is ended.`).waitFor()
    const after = await admin.call('listPortalSessions', { query: { enterpriseId: String(enterpriseId) } })
    assert.equal(typeof after.sessions.find((s) => s.sessionId === manage.sessionId)?.endedAt, 'string')
    await page
      .getByRole('button', { name: `End portal session ${manage.sessionId}` })
      .waitFor({ state: 'detached' })
    const nav = page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Portal' })
    assert.equal(await nav.isVisible(), true)
  })
})
