import assert from 'node:assert/strict'
import { createPublicKey, type JsonWebKeyInput, verify } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import {
  missingChromium,
  openBrowserContext,
  openConsolePage,
  SCREENSHOT_DIR,
  screenshotTo,
  signInWithKey,
  takeRefusalLogged,
  WAIT_MS,
} from '@earshot/test-kit/chromium'
import { eventually } from '@earshot/test-kit/eventually'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import canonicalize from 'canonicalize'
import type { Browser, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'

/*
 * The console's erasures in Chromium: an erasure of a device requested from the form (asked first), seen to
 * reach complete with its progress per endpoint (the receiver acknowledges the deletions but never confirms
 * erasing), its signed report downloaded and verified, and the device's UID never shown back; a viewer sees
 * the erasures but no form; and an enterprise's retention policy set and cleared on the enterprises screen.
 * PGlite only: the pages do not depend on the backend. EARSHOT_CONSOLE_SCREENSHOTS=1 writes the
 * screenshot shown in the operator guide to docs/console/.
 */

const DEVICE = 'DEV-SECRET-7731'

describe('console erasures in Chromium', { skip: missingChromium, timeout: 120_000 }, () => {
  let platform: TestPlatform
  let admin: AdminClient
  let partner: TestPartner
  let receiver: TestReceiver
  let browser: Browser
  let page: Page
  const consoleErrors: string[] = []

  before(async () => {
    platform = await startTestPlatform('pglite', {
      pushRetryScheduleSeconds: [0.1],
      pushConfirmWindowSeconds: 0.4,
      pushTimeoutSeconds: 0.5,
    })
    admin = new AdminClient(platform.adminUrl, platform.adminToken)
    partner = await createPartner(platform, 'Erasing Console Co')
    receiver = await startTestReceiver(partner.secret)
    await partner.call('/openapi/v1/endpoints/add', { url: receiver.url })
    for (const n of [1, 2]) {
      await ingest(platform, partner.enterpriseId, {
        deviceUid: DEVICE,
        title: `Call ${n}`,
        recordedAt: new Date().toISOString(),
        denoiseUrl: `https://cdn.example/call-${n}.mp3`,
        recordDuration: 1000,
      })
    }
    await eventually(async () => receiver.received.length >= 2, 20_000, 'both recordings pushed')
    ;({ browser, page } = await openConsolePage(consoleErrors))
  })
  afterEach(() => {
    assert.deepEqual(consoleErrors.splice(0), [], 'the pages logged no error')
  })
  after(async () => {
    await browser?.close()
    await receiver?.close()
    await platform?.stop()
  })

  test("a device's erasure, asked first, reaches complete; its report downloads; the UID is not shown back", async () => {
    const enterpriseId = partner.enterpriseId
    await page.goto(`${platform.adminUrl}/console#/erasures`)
    await signInWithKey(page, platform.adminToken)
    await page.getByRole('heading', { level: 1, name: 'Erasures' }).waitFor()
    await page.getByRole('form', { name: 'Erase recordings' }).waitFor()
    await page.locator('#erasure-enterprise').selectOption(String(enterpriseId))
    await page.getByLabel('Device UID').fill(DEVICE)
    await page.getByLabel('Reason (optional)').fill('ticket 99')
    await page.getByRole('button', { name: 'Erase…' }).click()
    const dialog = page.getByRole('dialog', {
      name: `Erase every recording of device ${DEVICE} in enterprise ${enterpriseId}?`,
    })
    await dialog.getByRole('button', { name: 'Erase', exact: true }).click()
    const requested = page.getByRole('status').getByText(/^Erasure \d+ requested: 2 recordings\.$/)
    const erasureId = Number(/\d+/.exec((await requested.textContent()) ?? '')?.[0])
    const detail = page.locator('#erasure-detail')
    await detail.getByRole('heading', { name: `Erasure ${erasureId}` }).waitFor()
    await detail.locator('.badge', { hasText: /^complete$/ }).waitFor()

    const [endpoint] = (await admin.listEnterpriseEndpoints(enterpriseId)).map((each) => each.endpointId)
    const progress = detail.locator(`#erasure-endpoint-${endpoint} td`)
    assert.deepEqual(await progress.allTextContents(), [String(endpoint), '2', '2', '0'])
    const row = page.locator(`#erasure-${erasureId}`)
    // The list and the detail are read by two calls: the list may show the state a moment later.
    await row.locator('td[data-label="State"]').getByText('complete', { exact: true }).waitFor()
    assert.equal(await row.locator('td[data-label="State"] .badge').count(), 1, 'the state as a badge')
    const shown = await admin.call('showErasure', { params: { erasureId } })
    assert.equal(
      await row.locator('td[data-label="Subject"]').textContent(),
      `${shown.subjectHash?.slice(0, 12)}…`,
    )
    assert.ok(((await detail.textContent()) ?? '').includes(shown.subjectHash as string))
    assert.ok(!((await page.locator('main').textContent()) ?? '').includes(DEVICE))
    assert.equal(await page.getByLabel('Device UID').inputValue(), '')
    assert.ok(!page.url().includes(DEVICE))
    await screenshotTo(page, SCREENSHOT_DIR, 'erasures')

    const downloading = page.waitForEvent('download')
    await detail.getByRole('button', { name: 'Download report' }).click()
    const download = await downloading
    assert.equal(download.suggestedFilename(), `earshot-erasure-${erasureId}-report.json`)
    const { report, signature } = JSON.parse(await readFile(await download.path(), 'utf8'))
    assert.deepEqual([report.erasureId, report.state, report.audioIds.length], [erasureId, 'complete', 2])
    const jwk = (await (
      await fetch(`${platform.partnerUrl}/.well-known/earshot-erasure-key`)
    ).json()) as JsonWebKeyInput['key']
    const key = createPublicKey({ key: jwk, format: 'jwk' })
    const signed = Buffer.from(canonicalize(report) as string)
    assert.ok(verify(null, signed, key, Buffer.from(signature, 'base64url')))
  })

  test('a viewer sees the erasures and no form; an unknown erasure is said so above the list', async () => {
    const { key } = await admin.createKey({ name: 'erasure viewer', role: 'viewer', enterprises: null })
    const viewer = await openBrowserContext(browser, consoleErrors)
    try {
      await viewer.page.goto(`${platform.adminUrl}/console#/erasures`)
      await signInWithKey(viewer.page, key)
      await viewer.page.getByRole('heading', { level: 1, name: 'Erasures' }).waitFor()
      const listed = viewer.page.getByRole('table', { name: 'Erasures' })
      await listed.or(viewer.page.getByText('No erasure yet.')).waitFor()
      assert.equal(await viewer.page.getByRole('form', { name: 'Erase recordings' }).count(), 0)

      await viewer.page.goto(`${platform.adminUrl}/console#/erasures?erasureId=999999`)
      await viewer.page.getByRole('alert').getByText('no erasure 999999', { exact: false }).waitFor()
      await takeRefusalLogged(consoleErrors, 404, '/admin/v1/erasures/999999', WAIT_MS)
      await listed.or(viewer.page.getByText('No erasure yet.')).waitFor()
    } finally {
      await viewer.context.close()
    }
  })

  test('the enterprises screen sets a retention policy, then clears it', async () => {
    const enterpriseId = partner.enterpriseId
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Enterprises' }).click()
    await page.getByRole('heading', { level: 1, name: 'Enterprises' }).waitFor()
    const retention = async (value: string) => {
      await page.locator(`#retention-${enterpriseId}`).click()
      const input = page.getByLabel(`Retention days of enterprise ${enterpriseId}`)
      await input.fill(value)
      await input.press('Enter')
    }
    await retention('30')
    await page
      .getByRole('status')
      .getByText(`Enterprise ${enterpriseId} erases its recordings 30 days after they were recorded.`)
      .waitFor()
    await page.locator(`#retention-${enterpriseId}`, { hasText: /^30 days$/ }).waitFor()
    const policy = async () =>
      (await admin.listEnterprises()).find((each) => each.enterpriseId === enterpriseId)?.retentionDays
    assert.equal(await policy(), 30)

    await retention('')
    await page
      .getByRole('status')
      .getByText(`Enterprise ${enterpriseId} has no retention policy: its recordings are kept until deleted.`)
      .waitFor()
    await page.locator(`#retention-${enterpriseId}`, { hasText: /^none$/ }).waitFor()
    assert.equal(await policy(), null)
  })
})
