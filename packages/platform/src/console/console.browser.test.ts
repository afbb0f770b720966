import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  DESKTOP,
  missingChromium,
  openConsolePage,
  PHONE,
  SCREENSHOT_DIR,
  screenshotTo,
  signInWithKey,
  takeRefusalLogged,
  WAIT_MS,
} from '@earshot/test-kit/chromium'
import { callbackSender, startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'

/*
 * The operator's whole path through the console (issue 15), in Debian's Chromium driven by
 * playwright-core (which downloads no browser): sign in (a wrong token first), create an enterprise,
 * set its push URL to a loopback receiver that refuses at first, import recordings through the upload
 * form, watch the deliveries fail, replay one and then a time range once the receiver accepts, and see
 * them confirmed; then the overview, a key rotation, a disable, keyboard use and the phone layout. Any
 * console error the pages cause fails the test; the refusals the test provokes on purpose are
 * accounted for one by one (Chromium logs every 4xx answer as a console error).
 *
 * EARSHOT_CONSOLE_SCREENSHOTS=1 writes the screenshots shown in the operator guide to docs/console/.
 */

/** The browser globals the test reads in the page: the tests compile without the DOM library. */
interface InPageElement {
  id: string
  textContent: string | null
  querySelector(selector: string): InPageElement | null
}

interface InPage {
  sessionStorage: { length: number; getItem(key: string): string | null }
  navigator: { clipboard: { readText(): Promise<string> } }
  document: {
    activeElement: { id: string; tagName: string } | null
    documentElement: { scrollWidth: number }
    querySelectorAll(selector: string): ArrayLike<InPageElement>
  }
  innerWidth: number
  getComputedStyle(element: unknown): { outlineStyle: string }
}

function recordingLine(i: number): string {
  return JSON.stringify({
    deviceUid: 'dev-console',
    title: `Standup ${i}`,
    recordedAt: `2026-11-2${i}T09:30:00+01:00`,
    denoiseUrl: `https://cdn.example/standup-${i}.mp3`,
    recordDuration: 60_000 + i,
  })
}

/** A datetime-local value (UTC: the browser context runs in UTC) to the minute. */
const minuteInput = (ms: number) => new Date(ms).toISOString().slice(0, 16)

for (const backend of testBackends) {
  describe(`operator console in Chromium (${backend})`, { skip: missingChromium, timeout: 180_000 }, () => {
    let platform: TestPlatform
    let browser: Browser
    let context: BrowserContext
    let page: Page
    let receiver: TestReceiver | undefined
    let files: string
    let enterpriseId = 0
    let secret = ''
    let failing = true
    const consoleErrors: string[] = []
    const screenshots = backend === testBackends[0] ? SCREENSHOT_DIR : undefined

    const screenshot = (name: string) => screenshotTo(page, screenshots, name)
    const expectRefusalLogged = (status: number, path: string) =>
      takeRefusalLogged(consoleErrors, status, path, WAIT_MS)

    const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true })
    const deliveryState = (deliveryId: number) =>
      page.locator(`#delivery-${deliveryId} td[data-label="State"] .badge`)

    function storedItems(): Promise<number> {
      return page.evaluate(() => (globalThis as unknown as InPage).sessionStorage.length)
    }

    /** The focused element as TAG#id. */
    function focusedElement(): Promise<string> {
      return page.evaluate(() => {
        const active = (globalThis as unknown as InPage).document.activeElement
        return `${active?.tagName}#${active?.id}`
      })
    }

    async function go(link: string): Promise<void> {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: link }).click()
      await heading(link === 'Import' ? 'Import recordings' : link).waitFor()
    }

    async function statesShown(): Promise<string[]> {
      return page.locator('tbody tr[id^="delivery-"] td[data-label="State"] .badge').allTextContents()
    }

    /** The page is no wider than the window: nothing to scroll sideways. */
    async function fitsWidth(): Promise<void> {
      const { scroll, inner } = await page.evaluate(() => {
        const w = globalThis as unknown as InPage
        return { scroll: w.document.documentElement.scrollWidth, inner: w.innerWidth }
      })
      assert.ok(scroll <= inner, `the page is ${scroll} px wide in a ${inner} px window`)
    }

    before(async () => {
      platform = await startTestPlatform(backend, { pushRetryScheduleSeconds: [0.05] })
      files = await mkdtemp(join(tmpdir(), 'earshot-console-'))
      ;({ browser, context, page } = await openConsolePage(consoleErrors))
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: platform.adminUrl })
    })

    afterEach(() => {
      assert.deepEqual(consoleErrors.splice(0), [], 'the pages logged no error')
    })

    after(async () => {
      await browser?.close()
      await receiver?.close()
      await platform?.stop()
      if (files) await rm(files, { recursive: true, force: true })
    })

    test('sign-in refuses a wrong token with a message, then keeps the right one in the tab only', async () => {
      await page.goto(`${platform.adminUrl}/console`)
      await heading('Sign in').waitFor()
      await screenshot('sign-in')

      await signInWithKey(page, 'not-the-token')
      await page.getByRole('alert').filter({ hasText: 'That key was refused.' }).waitFor()
      await expectRefusalLogged(401, '/admin/v1/enterprises')
      assert.equal(await storedItems(), 0, 'a wrong token is not kept')

      await signInWithKey(page, platform.adminToken)
      await heading('Overview').waitFor()
      assert.equal(
        await page.evaluate(() =>
          (globalThis as unknown as InPage).sessionStorage.getItem('earshot.adminToken'),
        ),
        platform.adminToken,
      )
      assert.deepEqual(await context.cookies(), [], 'no cookie')
      assert.ok(!page.url().includes(platform.adminToken), 'the token is not in the URL')
    })

    test('enterprises: create one (its secret shown once, copied), refuse a push URL as the API does, set one', async () => {
      await go('Enterprises')
      await page.getByLabel('Name', { exact: true }).fill('Acme Audio')
      await page.getByRole('button', { name: 'Create', exact: true }).click()
      const created = page.getByRole('heading', { level: 2, name: /^Enterprise \d+ created$/ })
      await created.waitFor()
      enterpriseId = Number(/\d+/.exec((await created.textContent()) ?? '')?.[0])
      secret = await page.getByLabel('Secret', { exact: true }).inputValue()
      assert.ok(enterpriseId > 0 && secret.length > 20)
      await page.getByRole('button', { name: 'Copy secret' }).click()
      await page.getByText('Copied to the clipboard.').waitFor()
      assert.equal(
        await page.evaluate(() => (globalThis as unknown as InPage).navigator.clipboard.readText()),
        secret,
      )

      // The partner's receiver: refuses with 503 until told otherwise, then acks and sends the receipt.
      const confirm = callbackSender(() => platform.partnerUrl, { enterpriseId, keyVersion: 1, secret })
      receiver = await startTestReceiver(secret, {
        answer: () =>
          failing ? { status: 503, body: { code: 5030 } } : { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if ((answer.body as { code: number }).code === 2000) void confirm(push.event.audioId)
        },
      })

      const row = page.getByRole('row').filter({ hasText: 'Acme Audio' })
      await row.locator('summary', { hasText: 'Push URL' }).click()
      const pushUrl = page.getByLabel(`Push URL of enterprise ${enterpriseId}`)
      await pushUrl.fill('http://169.254.169.254/latest/meta-data')
      await row.getByRole('button', { name: 'Save' }).click()
      await row.getByRole('alert').filter({ hasText: 'pushUrl: 169.254.169.254 is a' }).waitFor()
      await expectRefusalLogged(400, `/admin/v1/enterprises/${enterpriseId}/push-url`)

      await pushUrl.fill(receiver.url)
      await row.getByRole('button', { name: 'Save' }).click()
      await page.getByText(`Enterprise ${enterpriseId} now pushes to ${receiver.url}.`).waitFor()
      await page.getByRole('row').filter({ hasText: receiver.url }).waitFor()
      await fitsWidth()
      await screenshot('enterprises')
    })

    test('import: a bad file is refused line by line, a good one imports with its progress bar', async () => {
      await go('Import')
      await page.getByLabel('Enterprise', { exact: true }).selectOption(String(enterpriseId))
      const bad = join(files, 'bad.jsonl')
      await writeFile(bad, `${recordingLine(1)}\n{"deviceUid":\n${JSON.stringify({ title: 'no device' })}\n`)
      await page.getByLabel('JSON Lines file', { exact: true }).setInputFiles(bad)
      await page.getByRole('button', { name: 'Import', exact: true }).click()
      await page.getByRole('alert').filter({ hasText: 'Nothing was imported' }).waitFor()
      const refused = page.getByRole('list', { name: 'Refused lines' }).getByRole('listitem')
      await refused.first().waitFor()
      const lines = await refused.allTextContents()
      assert.equal(lines.length, 2, lines.join('\n'))
      assert.match(lines[0] ?? '', /^line 2: is not valid JSON/)
      assert.match(lines[1] ?? '', /^line 3: /)
      await expectRefusalLogged(400, `/admin/v1/enterprises/${enterpriseId}/recordings/import`)
      await screenshot('import-refused')

      const good = join(files, 'standups.jsonl')
      await writeFile(good, `${[1, 2, 3].map(recordingLine).join('\n')}\n`)
      await page.getByLabel('JSON Lines file', { exact: true }).setInputFiles(good)
      await page.getByRole('button', { name: 'Import', exact: true }).click()
      await page
        .getByText(`Imported 3 recordings into enterprise ${enterpriseId}; skipped 0 already imported.`)
        .waitFor()
      assert.deepEqual(
        await page
          .locator('#import-progress')
          .evaluate((bar: { value: number; max: number }) => [bar.value, bar.max]),
        [3, 3],
      )
      assert.equal(await page.getByRole('list', { name: 'Refused lines' }).getByRole('listitem').count(), 0)
      await screenshot('import')
    })

    let deliveryIds: number[] = []

    test('deliveries: filtered by enterprise, each fails, its timeline shows the attempts', async () => {
      await go('Deliveries')
      await page.getByLabel('Enterprise', { exact: true }).selectOption(String(enterpriseId))
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(new RegExp(`#/deliveries\\?enterpriseId=${enterpriseId}$`))
      // The page refreshes itself while a delivery is pending or in flight. The rows are read in the same
      // step as their states: the page may be drawn again (the hash change's render) right after.
      const listed = await page.waitForFunction(() => {
        const { document } = globalThis as unknown as InPage
        const rows = Array.from(document.querySelectorAll('tbody tr[id^="delivery-"]'))
        const failed = rows.every(
          (row) => row.querySelector('td[data-label="State"]')?.textContent === 'failed',
        )
        return rows.length === 3 && failed && rows.map((row) => Number(row.id.slice('delivery-'.length)))
      })
      deliveryIds = (await listed.jsonValue()) as number[]
      assert.deepEqual(
        deliveryIds,
        [...deliveryIds].sort((a, b) => b - a),
        'newest first',
      )

      const first = deliveryIds[2] as number
      const toggle = page.locator(`#toggle-${first}`)
      await toggle.click()
      assert.equal(await toggle.getAttribute('aria-expanded'), 'true')
      const attempts = page.locator(`#timeline-${first} .attempt`)
      await attempts.nth(1).waitFor()
      assert.equal(await attempts.count(), 2)
      for (const attempt of await attempts.all()) {
        const text = (await attempt.textContent()) ?? ''
        assert.match(text, /HTTP 503/)
        assert.match(text, /code 5030/)
        assert.match(text, /\d+ ms/)
      }
      await fitsWidth()
      await screenshot('deliveries')
    })

    test('replay one: its success recovers the push URL, which replays the rest; a range then has nothing to replay', async () => {
      failing = false
      const [third, second, first] = deliveryIds as [number, number, number]
      await page.getByRole('button', { name: `Replay delivery ${first}`, exact: true }).click()
      await page.getByText(`Delivery ${first} is pending again`).waitFor()
      await deliveryState(first).getByText('confirmed', { exact: true }).waitFor()
      const newest = page.locator(`#timeline-${first} .attempt`).nth(2)
      await newest.waitFor()
      assert.match((await newest.textContent()) ?? '', /HTTP 200.*code 2000/)
      // The URL's first ack since it began failing puts back what failed during the outage.
      for (const id of [second, third])
        await deliveryState(id).getByText('confirmed', { exact: true }).waitFor()
      assert.deepEqual(await statesShown(), ['confirmed', 'confirmed', 'confirmed'])

      const start = Date.now() - 5 * 60_000
      await page.getByLabel('Created from').fill(minuteInput(start))
      await page.getByLabel('Created before').fill(minuteInput(Date.now() + 5 * 60_000))
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/from=.*&to=/)
      // The page is drawn again a moment after its address changes: wait for the range in the new form.
      await page.locator('#filter-from[value]:not([value=""])').waitFor()
      await deliveryState(second).waitFor()

      await page.getByRole('button', { name: 'Replay range…' }).click()
      const dialog = page.getByRole('dialog', { name: 'Nothing to replay' })
      await dialog.waitFor()
      assert.match(
        (await dialog.textContent()) ?? '',
        new RegExp(`Enterprise ${enterpriseId} has no failed or unconfirmed delivery created from .*`),
      )
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await dialog.waitFor({ state: 'detached' })
    })

    test('the overview shows the hour of pushes and the push URL healthy again', async () => {
      await go('Overview')
      const push = page.getByRole('region', { name: 'Push, last 60 minutes' })
      await push.getByText('33.3%').waitFor()
      await push.getByText('success rate (3 of 9 attempts acked)').waitFor()
      assert.match((await push.textContent()) ?? '', /\d+(\.\d)? mslatency p50/)
      const states = page.getByRole('region', { name: 'Deliveries by state' })
      assert.match((await states.textContent()) ?? '', /0failed.*3confirmed, last 60 min/)
      const endpoint = page.getByRole('row').filter({ hasText: receiver?.url })
      assert.equal(await endpoint.locator('td[data-label="State"]').textContent(), 'healthy')
      assert.equal(await endpoint.locator('td[data-label="Consecutive failures"]').textContent(), '0')
      await fitsWidth()
      await screenshot('overview')
    })

    test('on a 390-px phone every page fits the width', async () => {
      await page.setViewportSize(PHONE)
      try {
        // What each page shows once drawn: a filter form comes with the heading, before the table.
        for (const [link, ready] of [
          ['Overview', 'main table, main form'],
          ['Enterprises', 'main table'],
          ['Recordings', 'main table, main form'],
          ['Import', 'main form'],
          ['Deliveries', 'main table'],
        ] as const) {
          await go(link)
          await page.locator(ready).first().waitFor()
          await fitsWidth()
        }
        const newest = deliveryIds[0] as number
        await page.locator(`#toggle-${newest}`).click()
        await page.locator(`#timeline-${newest} .attempt`).first().waitFor()
        await fitsWidth()
        await page
          .locator(`#delivery-${newest}`)
          .evaluate((row: { scrollIntoView(): void }) => row.scrollIntoView())
        await screenshot('phone-deliveries')
      } finally {
        await page.setViewportSize(DESKTOP)
      }
    })

    test('require issuedAt, rotate the key (the new secret shown once) and disable the enterprise after confirming', async () => {
      await go('Enterprises')
      await page.getByRole('switch', { name: `Require issuedAt of enterprise ${enterpriseId}` }).check()
      await page
        .getByText(`Enterprise ${enterpriseId} now refuses requests without issuedAt (4001).`)
        .waitFor()
      await page.getByRole('button', { name: `Rotate the key of enterprise ${enterpriseId}` }).click()
      await page.getByRole('heading', { level: 2, name: `Enterprise ${enterpriseId}: new key` }).waitFor()
      const rotated = await page.getByLabel('Secret', { exact: true }).inputValue()
      assert.ok(rotated.length > 20 && rotated !== secret)
      await page.getByText('Key version 1 stays valid until').waitFor()

      await page.getByRole('button', { name: `Disable enterprise ${enterpriseId}` }).click()
      const dialog = page.getByRole('dialog', { name: `Disable enterprise ${enterpriseId}?` })
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await dialog.waitFor({ state: 'detached' })
      const row = page.getByRole('row').filter({ hasText: 'Acme Audio' })
      assert.equal(await row.locator('td[data-label="State"]').textContent(), 'active')

      await page.getByRole('button', { name: `Disable enterprise ${enterpriseId}` }).click()
      await dialog.getByRole('button', { name: 'Disable' }).click()
      await page.getByText(`Enterprise ${enterpriseId} is disabled.`).waitFor()
      await row.locator('td[data-label="State"]').getByText('disabled').waitFor()
    })

    test('by keyboard alone: sign out, sign in and move between pages, the focus always visible', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click()
      await heading('Sign in').waitFor()
      assert.equal(await storedItems(), 0)
      assert.equal(await focusedElement(), 'INPUT#token', 'the token field has focus')
      await page.keyboard.type(platform.adminToken)
      await page.keyboard.press('Enter')
      await heading('Enterprises').waitFor() // the page the operator was on

      const importLink = page.getByRole('link', { name: 'Import' })
      // From the page's heading, back through Sign out and the owner's pages to the Import link.
      for (let tab = 0; tab < 8 && !(await isFocused(importLink)); tab++) {
        await page.keyboard.press('Shift+Tab')
      }
      assert.ok(await isFocused(importLink), 'Shift+Tab reaches the Import link')
      assert.notEqual(
        await importLink.evaluate(
          (link) => (globalThis as unknown as InPage).getComputedStyle(link).outlineStyle,
        ),
        'none',
        'the focused link shows its focus',
      )
      await page.keyboard.press('Enter')
      await heading('Import recordings').waitFor()
      assert.equal(await focusedElement(), 'H1#', 'focus moves to the new page')
      await page.locator('#import-enterprise').waitFor() // drawn once the enterprises have loaded
      await page.keyboard.press('Tab')
      assert.equal(await focusedElement(), 'SELECT#import-enterprise')
    })
  })
}

async function isFocused(locator: Locator): Promise<boolean> {
  return locator.evaluate((element) => element === (globalThis as unknown as InPage).document.activeElement)
}
