import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  missingChromium,
  openBrowserContext,
  openConsolePage,
  PHONE,
  takeRefusalLogged,
  WAIT_MS,
} from '@earshot/test-kit/chromium'
import { eventually } from '@earshot/test-kit/eventually'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'

/*
 * Operator access in the console (issue 45), in Debian's Chromium: the first owner sets up from the link
 * the platform printed, signs out and in with a password; a viewer set up from its own link sees no
 * control its role lacks and is refused (4031) when it forces one; an operator limited to one enterprise
 * sees only that one; signing out everywhere ends the session of another browser; API keys are created
 * and revoked; and the audit page shows all of it. Refusals the test provokes are accounted for one by
 * one (Chromium logs every 4xx answer as a console error); any other console error fails the test.
 */

/** The browser globals the test reads in the page: the tests compile without the DOM library. */
interface InPage {
  sessionStorage: { length: number }
  document: {
    activeElement: { id: string } | null
    documentElement: { scrollWidth: number }
  }
  innerWidth: number
  fetch(url: string, init?: object): Promise<{ status: number; json(): Promise<unknown> }>
}

const OWNER = { email: 'ada@earshot.test', name: 'Ada Lovelace', password: 'analytical engine 1843' }
const VIEWER = { email: 'vic@earshot.test', name: 'Vic Viewer', password: 'only looking, never touching' }
const LIMITED = { email: 'lin@earshot.test', name: 'Lin Limited', password: 'one enterprise is plenty' }

for (const backend of testBackends) {
  describe(`operator access in the console (${backend})`, { skip: missingChromium, timeout: 240_000 }, () => {
    let platform: TestPlatform
    let breakGlass: AdminClient
    let browser: Browser
    let page: Page
    const others: BrowserContext[] = []
    const consoleErrors: string[] = []
    let acme = 0
    let globex = 0
    let audioId = ''
    let viewerPage: Page

    const heading = (on: Page, name: string) => on.getByRole('heading', { level: 1, name, exact: true })
    const expectRefusalLogged = (status: number, path: string) =>
      takeRefusalLogged(consoleErrors, status, path, WAIT_MS)
    const who = (on: Page) => on.locator('#who')

    async function go(on: Page, link: string, title = link): Promise<void> {
      await on
        .getByRole('navigation', { name: 'Pages' })
        .getByRole('link', { name: link, exact: true })
        .click()
      await heading(on, title).waitFor()
    }

    /** Another browser (its own cookies and storage) at the console. */
    async function anotherBrowser(url: string): Promise<Page> {
      const opened = await openBrowserContext(browser, consoleErrors)
      others.push(opened.context)
      await opened.page.goto(url)
      return opened.page
    }

    /** Completes the setup page of a link: `email` only where the link asks for one (the first owner's). */
    async function setUp(on: Page, who: { name: string; password: string; email?: string }): Promise<void> {
      await heading(on, 'Set up your sign-in').waitFor()
      if (who.email) await on.getByLabel('Email', { exact: true }).fill(who.email)
      await on.getByLabel('Name (optional)').fill(who.name)
      await on.getByLabel('Password', { exact: true }).fill(who.password)
      await on.getByLabel('Password again').fill(who.password)
      await on.getByRole('button', { name: 'Set up and sign in' }).click()
      await heading(on, 'Overview').waitFor()
    }

    async function signInWithPassword(on: Page, who: { email: string; password: string }): Promise<void> {
      const form = on.getByRole('form', { name: 'Sign in with email and password' })
      await form.getByLabel('Email', { exact: true }).fill(who.email)
      await form.getByLabel('Password', { exact: true }).fill(who.password)
      await form.getByRole('button', { name: 'Sign in', exact: true }).click()
    }

    /** A change forced from the page with its session's cookie and CSRF token, past the hidden controls. */
    function forced(on: Page, method: string, path: string) {
      return on.evaluate(
        async ([method, path]) => {
          const w = globalThis as unknown as InPage
          const session = (await (await w.fetch('/admin/v1/session')).json()) as { csrfToken: string }
          const answer = await w.fetch(path, { method, headers: { 'x-csrf-token': session.csrfToken } })
          return { status: answer.status, body: (await answer.json()) as { code: number; msg: string } }
        },
        [method, path] as const,
      )
    }

    async function fitsWidth(on: Page): Promise<void> {
      const { scroll, inner } = await on.evaluate(() => {
        const w = globalThis as unknown as InPage
        return { scroll: w.document.documentElement.scrollWidth, inner: w.innerWidth }
      })
      assert.ok(scroll <= inner, `the page is ${scroll} px wide in a ${inner} px window`)
    }

    before(async () => {
      platform = await startTestPlatform(backend)
      breakGlass = new AdminClient(platform.adminUrl, platform.adminToken)
      acme = (await breakGlass.createEnterprise('Acme Audio')).enterpriseId
      globex = (await breakGlass.createEnterprise('Globex Sound')).enterpriseId
      const line = {
        deviceUid: 'dev-access',
        title: 'Quarterly review',
        recordedAt: '2026-11-20T09:30:00Z',
        denoiseUrl: 'https://cdn.example/review.mp3',
        recordDuration: 61_000,
      }
      const lines = []
      for await (const answered of breakGlass.importRecordings(acme, `${JSON.stringify(line)}\n`))
        lines.push(answered)
      assert.deepEqual(lines.at(-1), { imported: 1, skipped: 0 })
      audioId = (await breakGlass.listRecordings(acme)).items[0]?.audioId ?? ''
      assert.ok(audioId)
      ;({ browser, page } = await openConsolePage(consoleErrors))
    })

    afterEach(() => {
      assert.deepEqual(consoleErrors.splice(0), [], 'the pages logged no error')
    })

    after(async () => {
      for (const context of others) await context.close()
      await browser?.close()
      await platform?.stop()
    })

    test("the first owner's setup link: set up, signed in, name and role shown; the link is then spent", async () => {
      assert.ok(platform.setupUrl, 'a platform without an owner prints a setup link')
      await page.goto(platform.setupUrl)
      await setUp(page, OWNER)
      assert.match((await who(page).textContent()) ?? '', /Ada Lovelace\s*owner/)
      assert.ok(!page.url().includes('setup='), 'the spent token leaves the address')
      const [cookie] = await page.context().cookies()
      assert.equal(cookie?.name, 'earshot_session')
      assert.equal(cookie?.httpOnly, true)
      assert.equal(cookie?.sameSite, 'Strict')
      const stored = await page.evaluate(() => (globalThis as unknown as InPage).sessionStorage.length)
      assert.equal(stored, 0, 'no key in the tab: the session is the cookie')
      for (const link of ['Audit', 'Operators', 'API keys']) {
        await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: link }).waitFor()
      }

      await page.goto(platform.setupUrl)
      await heading(page, 'Set up your sign-in').waitFor()
      await page.getByLabel('Password', { exact: true }).fill(OWNER.password)
      await page.getByLabel('Password again').fill(OWNER.password)
      await page.getByRole('button', { name: 'Set up and sign in' }).click()
      await page.getByRole('alert').filter({ hasText: 'this setup link was already used' }).waitFor()
      await expectRefusalLogged(404, '/admin/v1/setup')
      await page.goto(`${platform.adminUrl}/console/#/overview`)
      await heading(page, 'Overview').waitFor()
      assert.match((await who(page).textContent()) ?? '', /Ada Lovelace/, 'a reload keeps the session')
    })

    test('by keyboard: sign out, a wrong password refused, then signed in with the right one', async () => {
      await page.getByRole('button', { name: 'Sign out', exact: true }).click()
      await heading(page, 'Sign in').waitFor()
      await page.getByRole('alert').filter({ hasText: 'Signed out.' }).waitFor()
      assert.equal(
        await page.evaluate(() => (globalThis as unknown as InPage).document.activeElement?.id),
        'sign-in-email',
      )
      await page.keyboard.type(OWNER.email)
      await page.keyboard.press('Tab')
      await page.keyboard.type('not the password at all')
      await page.keyboard.press('Enter')
      await page.getByRole('alert').filter({ hasText: 'wrong email or password' }).waitFor()
      await expectRefusalLogged(401, '/admin/v1/sign-in')
      await page.getByLabel('Password', { exact: true }).fill(OWNER.password)
      await page.keyboard.press('Enter')
      await heading(page, 'Overview').waitFor()
      assert.match((await who(page).textContent()) ?? '', /Ada Lovelace\s*owner/)
    })

    test('a viewer sees no secret, rotate-key or delete control, and forcing one is refused with 4031', async () => {
      // The owner sees the controls the viewer must not.
      await page.goto(`${platform.adminUrl}/console/#/recordings?enterpriseId=${acme}`)
      await page.getByRole('button', { name: `Open recording ${audioId}` }).click()
      await page.getByRole('button', { name: `Delete recording ${audioId}` }).waitFor()

      const { setupUrl } = await breakGlass.call('addOperator', {
        body: { email: VIEWER.email, name: VIEWER.name, role: 'viewer' },
      })
      viewerPage = await anotherBrowser(setupUrl)
      await setUp(viewerPage, VIEWER)
      assert.match((await who(viewerPage).textContent()) ?? '', /Vic Viewer\s*viewer/)
      const nav = viewerPage.getByRole('navigation', { name: 'Pages' })
      await nav.getByRole('link', { name: 'Deliveries' }).waitFor()
      for (const link of ['Import', 'Audit', 'Operators', 'API keys']) {
        assert.equal(await nav.getByRole('link', { name: link }).count(), 0, `no ${link} link`)
      }
      assert.equal(await viewerPage.getByRole('button', { name: 'Sign out everywhere' }).count(), 1)

      await go(viewerPage, 'Enterprises')
      await viewerPage.getByRole('row').filter({ hasText: 'Acme Audio' }).waitFor()
      assert.equal(await viewerPage.getByRole('heading', { name: 'Create an enterprise' }).count(), 0)
      assert.equal(await viewerPage.getByRole('button', { name: /^Rotate the key/ }).count(), 0)
      assert.equal(await viewerPage.getByRole('button', { name: /^Disable enterprise/ }).count(), 0)
      assert.ok(
        await viewerPage.getByRole('switch', { name: `Require issuedAt of enterprise ${acme}` }).isDisabled(),
      )

      await viewerPage.goto(`${platform.adminUrl}/console/#/recordings?enterpriseId=${acme}`)
      await viewerPage.getByRole('button', { name: `Open recording ${audioId}` }).click()
      await viewerPage.getByRole('heading', { level: 2, name: `Recording ${audioId}` }).waitFor()
      assert.equal(await viewerPage.getByRole('button', { name: `Delete recording ${audioId}` }).count(), 0)
      assert.equal(await viewerPage.getByRole('heading', { name: 'Upload its audio' }).count(), 0)

      const rotate = await forced(viewerPage, 'POST', `/admin/v1/enterprises/${acme}/rotate-key`)
      assert.equal(rotate.status, 403)
      assert.equal(rotate.body.code, 4031)
      assert.match(rotate.body.msg, /the viewer role does not grant secrets\.read/)
      await expectRefusalLogged(403, `/admin/v1/enterprises/${acme}/rotate-key`)
      const remove = await forced(viewerPage, 'DELETE', `/admin/v1/enterprises/${acme}/recordings/${audioId}`)
      assert.equal(remove.body.code, 4031)
      assert.match(remove.body.msg, /recordings\.write/)
      await expectRefusalLogged(403, `/admin/v1/enterprises/${acme}/recordings/${audioId}`)
      assert.equal((await breakGlass.listRecordings(acme)).items.length, 1, 'nothing was deleted')

      await viewerPage.goto(`${platform.adminUrl}/console/#/operators`)
      await heading(viewerPage, 'Operators').waitFor()
      await viewerPage.getByText('Managing operators needs the operators.manage permission').waitFor()
    })

    test('an operator limited to one enterprise, added on the Operators page, sees only that one', async () => {
      await go(page, 'Operators')
      const form = page.getByRole('form', { name: 'Add an operator' })
      await form.getByLabel('Email', { exact: true }).fill(LIMITED.email)
      await form.getByLabel('Role', { exact: true }).selectOption('operator')
      await form.getByLabel(`${acme} · Acme Audio`).check()
      await form.getByRole('button', { name: 'Add' }).click()
      await page.getByRole('heading', { level: 2, name: `${LIMITED.email} added` }).waitFor()
      const setupUrl = await page.getByLabel('Setup link').inputValue()
      assert.match(setupUrl, /\/console\/#setup=/)
      const row = page.getByRole('row').filter({ hasText: LIMITED.email })
      assert.equal(await row.locator('td[data-label="Role"]').textContent(), 'operator')
      assert.equal(await row.locator('td[data-label="Enterprises"]').textContent(), String(acme))
      assert.equal(await row.locator('td[data-label="Set up"]').textContent(), 'no')

      const limited = await anotherBrowser(setupUrl)
      await setUp(limited, LIMITED)
      assert.match(
        (await who(limited).textContent()) ?? '',
        new RegExp(`Lin Limited\\s*operator\\s*enterprise ${acme}`),
      )
      await go(limited, 'Enterprises')
      await limited.getByRole('row').filter({ hasText: 'Acme Audio' }).waitFor()
      assert.equal(await limited.getByRole('row').filter({ hasText: 'Globex Sound' }).count(), 0)
      assert.equal(await limited.locator('tbody tr').count(), 1)

      await limited.goto(`${platform.adminUrl}/console/#/endpoints?enterpriseId=${globex}`)
      await limited
        .getByRole('alert')
        .filter({ hasText: `no enterprise ${globex}` })
        .waitFor()
      await expectRefusalLogged(404, `/admin/v1/enterprises/${globex}/endpoints`)

      await page.reload()
      await heading(page, 'Operators').waitFor()
      const setUpCell = page
        .getByRole('row')
        .filter({ hasText: LIMITED.email })
        .locator('td[data-label="Set up"]')
      assert.equal(await setUpCell.textContent(), 'yes')
    })

    test('sign out everywhere in one browser ends the same operator’s session in another', async () => {
      const elsewhere = await anotherBrowser(`${platform.adminUrl}/console/`)
      await heading(elsewhere, 'Sign in').waitFor()
      await signInWithPassword(elsewhere, OWNER)
      await heading(elsewhere, 'Overview').waitFor()

      await elsewhere.getByRole('button', { name: 'Sign out everywhere' }).click()
      await heading(elsewhere, 'Sign in').waitFor()
      const said = elsewhere.getByRole('alert').filter({ hasText: /^Signed out/ })
      await said.waitFor()
      // This browser's session and the first one's.
      assert.equal(await said.textContent(), 'Signed out everywhere: 2 sessions ended.')

      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Enterprises' }).click()
      await heading(page, 'Sign in').waitFor()
      await page.getByRole('alert').filter({ hasText: 'Your console session has ended' }).waitFor()
      await expectRefusalLogged(401, '/admin/v1/enterprises')
      await signInWithPassword(page, OWNER)
      await heading(page, 'Enterprises').waitFor()
    })

    test('API keys: one created (shown once), working, then revoked and refused', async () => {
      await go(page, 'API keys')
      const form = page.getByRole('form', { name: 'Create an API key' })
      await form.getByLabel('Name', { exact: true }).fill('nightly export')
      await form.getByLabel('Role', { exact: true }).selectOption('viewer')
      await form.getByLabel('Expires after (optional)').fill('90d')
      await form.getByRole('button', { name: 'Create' }).click()
      const created = page.getByRole('heading', { level: 2, name: /^Key \d+ created$/ })
      await created.waitFor()
      const keyId = Number(/\d+/.exec((await created.textContent()) ?? '')?.[0])
      const key = await page.getByLabel('API key', { exact: true }).inputValue()
      assert.match(key, /^esk_/)
      const session = await new AdminClient(platform.adminUrl, key).call('session')
      assert.equal(session.role, 'viewer')
      const row = page.locator(`#key-${keyId}`)
      assert.match((await row.locator('td[data-label="Created by"]').textContent()) ?? '', /^operator:\d+$/)
      assert.match((await row.locator('td[data-label="Expires"]').textContent()) ?? '', /UTC$/)

      await page.getByRole('button', { name: `Revoke key ${keyId}` }).click()
      await page
        .getByRole('dialog', { name: `Revoke key ${keyId}?` })
        .getByRole('button', { name: 'Revoke' })
        .click()
      await page.getByText(`Key ${keyId} (nightly export) is revoked.`).waitFor()
      // The list is drawn again after the status says so.
      await row.locator('td[data-label="Revoked"] time').waitFor()
      assert.equal(await page.getByRole('button', { name: `Revoke key ${keyId}` }).count(), 0)
      await assert.rejects(new AdminClient(platform.adminUrl, key).call('listEnterprises'), { code: 4010 })
    })

    test("the audit page shows the viewer's refused attempt and the owner's changes; the chain verifies", async () => {
      await go(page, 'Audit', 'Audit trail')
      const refused = page.locator('tbody tr.refused').filter({ hasText: 'rotateKey' })
      await refused.waitFor()
      assert.match((await refused.locator('td[data-label="Actor"]').textContent()) ?? '', /Vic Viewer/)
      assert.equal(await refused.locator('td[data-label="Outcome"]').textContent(), 'refused')
      assert.equal(await refused.locator('td[data-label="Target"]').textContent(), `enterprise ${acme}`)
      const added = page
        .locator('tbody tr')
        .filter({ hasText: 'addOperator' })
        .filter({ hasText: 'Ada Lovelace' })
      assert.equal(await added.locator('td[data-label="Outcome"]').textContent(), 'ok')
      assert.match(
        (await added.locator('td[data-label="Change"]').textContent()) ?? '',
        new RegExp(`email=${LIMITED.email}`),
      )
      await page.locator('tbody tr').filter({ hasText: 'revokeKey' }).first().waitFor()

      await refused.getByRole('link', { name: /^Rows of operator:/ }).click()
      await page.waitForURL(/#\/audit\?actor=operator%3A\d+$/)
      // The URL changes before the rows do: the unfiltered rows may still be shown for a moment.
      const onlyVic = (names: string[]) => names.length > 0 && names.every((name) => name === 'Vic Viewer')
      const actorCells = page.locator('tbody td[data-label="Actor"] span')
      await eventually(
        async () => onlyVic(await actorCells.allTextContents()),
        WAIT_MS,
        "only Vic Viewer's rows",
      )
      await page.locator('tbody tr').filter({ hasText: 'completeSetup' }).waitFor()
      const actors = await actorCells.allTextContents()
      assert.ok(onlyVic(actors), actors.join(', '))

      await page.getByRole('button', { name: 'Verify chain' }).click()
      await page.getByText(/^The chain is intact: \d+ rows checked\.$/).waitFor()
    })

    test('the audit trail a page at a time: older rows before the last one shown, and back', async () => {
      const shownSeqs = async () =>
        (
          await page
            .locator('tbody tr[id^="audit-"]')
            .evaluateAll((rows: { id: string }[]) => rows.map((row) => row.id))
        ).map((id) => Number(id.slice('audit-'.length)))
      await page.goto(`${platform.adminUrl}/console/#/audit?limit=3`)
      // Only the address's fragment changed: wait for the page drawn without the actor filter.
      await page.locator('#audit-actor[value=""]').waitFor()
      await page.getByText('Page 1', { exact: true }).waitFor()
      await page.locator('tbody tr[id^="audit-"]').nth(2).waitFor()
      const first = await shownSeqs()
      assert.equal(first.length, 3)
      assert.deepEqual(
        first,
        [...first].sort((a, b) => b - a),
        'newest first',
      )
      assert.ok(await page.getByRole('button', { name: '← Newer' }).isDisabled())

      await page.getByRole('button', { name: 'Older →' }).click()
      await page.getByText('Page 2', { exact: true }).waitFor()
      await page.locator(`#audit-${(first[2] as number) - 1}`).waitFor()
      const second = await shownSeqs()
      assert.deepEqual(
        second,
        [0, 1, 2].map((i) => (first[2] as number) - 1 - i),
      )

      await page.getByRole('button', { name: '← Newer' }).click()
      await page.getByText('Page 1', { exact: true }).waitFor()
      await page.locator(`#audit-${first[0]}`).waitFor()
      assert.deepEqual(await shownSeqs(), first)
    })

    test('on a 390-px phone the access pages fit the width', async () => {
      await page.setViewportSize(PHONE)
      for (const [link, title] of [['Operators'], ['API keys'], ['Audit', 'Audit trail']] as const) {
        await go(page, link, title)
        await page.locator('main table').first().waitFor()
        await fitsWidth(page)
      }
      await viewerPage.setViewportSize(PHONE)
      await viewerPage.getByRole('button', { name: 'Sign out', exact: true }).click()
      await heading(viewerPage, 'Sign in').waitFor()
      await fitsWidth(viewerPage)
    })
  })
}
