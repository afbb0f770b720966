import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { missingChromium, openConsolePage } from '@earshot/test-kit/chromium'
import type { Browser, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'
import { mintLink, visit } from './portal-visit.test.support.js'

/*
 * The portal shows the enterprise's retention policy, as its session answers it: the days after which
 * recordings are erased, or that there is none; the page read again shows a policy an operator changed.
 * PGlite only: the page does not depend on the backend.
 */

describe('the retention policy in the partner portal', { skip: missingChromium, timeout: 60_000 }, () => {
  let platform: TestPlatform
  let admin: AdminClient
  let browser: Browser
  let page: Page
  const consoleErrors: string[] = []

  before(async () => {
    platform = await startTestPlatform('pglite', { pushDispatch: false })
    admin = new AdminClient(platform.adminUrl, platform.adminToken)
    ;({ browser, page } = await openConsolePage(consoleErrors))
  })
  afterEach(() => {
    assert.deepEqual(consoleErrors.splice(0), [], 'the page logged no error')
  })
  after(async () => {
    await browser?.close()
    await platform?.stop()
  })

  test('the endpoints section says after how many days recordings are erased, or that they are kept', async () => {
    const { enterpriseId } = await admin.createEnterprise('Retained Portal Co')
    await admin.updateEnterprise(enterpriseId, { retentionDays: 30 })
    const { session } = await visit(platform, await mintLink(platform, enterpriseId))
    assert.equal(session.retentionDays, 30)

    await page.goto(await mintLink(platform, enterpriseId))
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor()
    const note = page.locator('#retention-policy')
    assert.equal(
      await note.textContent(),
      'Retention: Recordings are erased 30 days after they were recorded; each is then pushed to you as recording.deleted.',
    )

    await admin.updateEnterprise(enterpriseId, { retentionDays: 0 })
    await page.reload()
    await note.getByText('No retention policy: your recordings are kept until they are deleted.').waitFor()
  })
})
