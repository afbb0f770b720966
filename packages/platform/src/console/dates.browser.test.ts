import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { missingChromium, openConsolePage, signInWithKey } from '@earshot/test-kit/chromium'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import type { Browser, Page } from 'playwright-core'

/*
 * The console writes every instant in UTC with its zone (2026-11-26 14:03:07 UTC), whatever the browser's
 * zone: run here in Kathmandu (UTC+05:45) and a US locale, where local time would show other digits.
 */

const UTC_STAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/

/** An instant as the console should write it. */
const utc = (iso: string) => `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC`

describe('console dates in Chromium', { skip: missingChromium, timeout: 120_000 }, () => {
  let platform: TestPlatform
  let browser: Browser
  let page: Page
  const errors: string[] = []

  before(async () => {
    platform = await startTestPlatform('pglite')
    ;({ browser, page } = await openConsolePage(errors, { timezoneId: 'Asia/Kathmandu', locale: 'en-US' }))
  })

  after(async () => {
    await browser?.close()
    await platform?.stop()
  })

  test("stamp() writes UTC with the zone, not the browser's local time", async () => {
    await page.goto(`${platform.adminUrl}/console`)
    const zone = await page.evaluate(() => new Date('2026-11-26T14:03:07Z').getTimezoneOffset())
    assert.equal(zone, -345, 'the browser runs at UTC+05:45')
    const shown = await page.evaluate(async (module) => {
      const { stamp } = await import(module)
      const text = (value: unknown) => {
        const made = stamp(value)
        return typeof made === 'string' ? made : `${made.textContent} | ${made.getAttribute('title')}`
      }
      return [
        text('2026-11-26T14:03:07.123Z'),
        text('2026-11-26T23:30:00-05:00'),
        text('2026-12-31T23:59:59.999999Z'),
        text(null),
        text('not a time'),
      ]
    }, '/console/dom.js')
    assert.deepEqual(shown, [
      '2026-11-26 14:03:07 UTC | 2026-11-26T14:03:07.123Z',
      '2026-11-27 04:30:00 UTC | 2026-11-26T23:30:00-05:00',
      '2026-12-31 23:59:59 UTC | 2026-12-31T23:59:59.999999Z',
      '—',
      'not a time | not a time',
    ])
  })

  test('the pages show UTC: an enterprise created, and the overview', async () => {
    const partner = await createPartner(platform, 'Zone Co')
    const listed = await adminClientOf(platform).listEnterprises()
    const createdAt = listed.find((e) => e.enterpriseId === partner.enterpriseId)?.createdAt
    assert.ok(createdAt)

    await page.goto(`${platform.adminUrl}/console`)
    await signInWithKey(page, platform.adminToken)
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    const asOf = (await page.locator('time').first().textContent()) ?? ''
    assert.match(asOf, UTC_STAMP)

    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Enterprises' }).click()
    const row = page.locator('tr').filter({ hasText: 'Zone Co' })
    const created = (await row.locator('td[data-label="Created"]').textContent()) ?? ''
    assert.equal(created, utc(createdAt))
    assert.deepEqual(errors, [], 'the pages logged no error')
  })
})
