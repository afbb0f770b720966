import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { ingest } from '@earshot/test-kit/calls'
import {
  DESKTOP,
  missingChromium,
  openBrowserContext,
  openConsolePage,
  takeRefusalLogged,
  WAIT_MS,
} from '@earshot/test-kit/chromium'
import { eventually } from '@earshot/test-kit/eventually'
import { callbackSender, startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import type { Browser, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'
import {
  type Credentials,
  fitsWidth,
  linkFromApi,
  linkFromCli,
  type PortalLink,
  portalCall,
  sealedData,
  transcriptRecording,
} from './portal.browser.test.support.js'

/*
 * The partner portal in Debian's Chromium driven by playwright-core, as a partner: open a link minted by
 * the Node kit's CLI, add an endpoint subscribed to transcripts only, watch a delivery fail with the
 * receiver's answer, fix the receiver and replay since a time until the deliveries are confirmed, run the
 * receiver check on a receiver that fails an item, read the service levels, rotate the key and query with
 * the new secret; then edit requests to reach another enterprise's ids (4040 each), send a change with a
 * stale CSRF token (the page recovers), open the spent link again, and use a view session, an ended one
 * and an expired one. Phone width too. Any console error the
 * pages cause fails the test; the refusals the test provokes are accounted for one by one.
 */

const PHONE_PORTRAIT = { width: 375, height: 740 }
const SESSION_SECONDS = 8 * 60 * 60
/** What the failing receiver answers: recognisable, and markup that must be shown as text. */
const DOWN = 'PORTAL-TEST receiver down <b>for maintenance</b>'

for (const backend of testBackends) {
  describe(`the partner portal in Chromium (${backend})`, { skip: missingChromium, timeout: 240_000 }, () => {
    let platform: TestPlatform
    let admin: AdminClient
    let browser: Browser
    let page: Page
    let receiver: TestReceiver
    let checkTarget: TestReceiver
    let partner: Credentials
    let link: PortalLink
    let failing = true
    /** Moved forward to expire the portal's sessions. */
    let clockOffsetMs = 0
    const other = { endpointId: 0, deliveryId: 0 }
    const consoleErrors: string[] = []

    const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true })
    const section = (name: string) =>
      page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true })
    const status = () => page.getByRole('status').filter({ hasText: /\S/ })
    /** The delivery rows of one recording: its Audio ID cell, exactly (portal-call-1 is not portal-call-10). */
    const deliveryRows = (audioId: string) =>
      page.locator('tr[data-delivery-id]').filter({
        has: page.locator('td[data-label="Audio ID"]').getByText(audioId, { exact: true }),
      })
    const expectRefusalLogged = (status: number, path: string) =>
      takeRefusalLogged(consoleErrors, status, path, WAIT_MS)

    before(async () => {
      platform = await startTestPlatform(
        backend,
        { pushRetryScheduleSeconds: [0.05], portalSessionSeconds: SESSION_SECONDS },
        { clock: () => Date.now() + clockOffsetMs },
      )
      admin = new AdminClient(platform.adminUrl, platform.adminToken)
      partner = await admin.createEnterprise('Portal Co')
      // The partner's receiver: refuses with a recognisable answer while `failing`, else acks and confirms.
      const confirm = callbackSender(() => platform.partnerUrl, partner)
      receiver = await startTestReceiver(partner.secret, {
        answer: () =>
          failing ? { status: 503, body: { code: 5030, msg: DOWN } } : { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if ((answer.body as { code: number }).code === 2000) void confirm(push.event.audioId)
        },
      })
      // A receiver that follows the protocol but for deletions, which it refuses: the check fails that item.
      checkTarget = await startTestReceiver(partner.secret, {
        answer: (push) =>
          push.event.eventType === 'recording.deleted'
            ? { status: 500, body: { code: 5000, msg: 'deletions are not handled here' } }
            : { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if ((answer.body as { code: number }).code === 2000) void confirm(push.event.audioId)
        },
      })
      await otherEnterprise()
      ;({ browser, page } = await openConsolePage(consoleErrors))
    })

    /** Another enterprise with an endpoint and a delivery: ids a session of Portal Co must not reach. */
    async function otherEnterprise(): Promise<void> {
      const created = await admin.createEnterprise('Other Co')
      const otherReceiver = await startTestReceiver(created.secret)
      const endpoint = await admin.addEndpoint(created.enterpriseId, { url: otherReceiver.url })
      other.endpointId = endpoint.endpointId
      await ingest(platform, created.enterpriseId, transcriptRecording('other-call-1'))
      await eventually(
        async () => {
          const page = await sealedData(platform, created, '/openapi/v1/deliveries/list', {})
          const [first] = page.items as { deliveryId: number }[]
          other.deliveryId = first?.deliveryId ?? 0
          return other.deliveryId > 0
        },
        WAIT_MS,
        "the other enterprise's delivery",
      )
      await otherReceiver.close()
    }

    afterEach(() => {
      assert.deepEqual(consoleErrors.splice(0), [], 'the pages logged no error')
    })

    after(async () => {
      await browser?.close()
      await receiver?.close()
      await checkTarget?.close()
      await platform?.stop()
    })

    test('a link minted by earshot-partner portal opens a manage session for the enterprise', async () => {
      link = await linkFromCli(platform, partner, 'manage')
      await page.goto(link.url)
      await page.waitForURL((url) => url.pathname === '/portal/')
      await heading('Endpoints').waitFor()
      assert.equal(await page.locator('#enterprise-name').textContent(), 'Portal Co')
      assert.equal(await page.locator('#session-access').textContent(), 'manage')
      assert.match(
        (await page.locator('#session-expiry').textContent()) ?? '',
        /^session ends \d{4}-\d\d-\d\d /,
      )
      assert.ok(await page.locator('#banner').isHidden(), 'no operator banner for the partner')
      await page.getByText('No endpoint yet: Earshot pushes nowhere for you.').waitFor()
      assert.equal(await section('Endpoints').getAttribute('aria-current'), 'page')
    })

    test('add an endpoint subscribed to transcripts only', async () => {
      const form = page.getByRole('form', { name: 'Add an endpoint' })
      await form.getByLabel('URL', { exact: true }).fill(receiver.url)
      for (const type of ['audio_ready', 'deleted', 'updated'])
        await form.getByLabel(`recording.${type}`).uncheck()
      await form.getByLabel('Description (optional)').fill('Transcripts to the archive')
      await form.getByRole('button', { name: 'Add' }).click()
      const added = status().filter({ hasText: /^Endpoint \d+ added/ })
      await added.waitFor()
      const endpointId = Number(/\d+/.exec((await added.textContent()) ?? '')?.[0])
      const row = page.locator(`tr[data-endpoint-id="${endpointId}"]`)
      // The status comes before the table is read again: wait for the new row.
      await row.waitFor()
      // The console's table of endpoints: each event type shown subscribed or not.
      assert.deepEqual(await row.locator('.event-types li.on .event-name').allTextContents(), [
        'transcript_ready',
      ])
      assert.equal(await row.locator('.event-types li.off').count(), 3)
      assert.equal(await row.locator('td[data-label="URL"]').textContent(), receiver.url)
      assert.equal(await row.locator('td[data-label="Enabled"]').textContent(), 'enabled')
      assert.equal(await row.locator('td[data-label="Rate"]').textContent(), 'no limit')
      assert.equal(await row.locator('td[data-label="Last success"]').textContent(), '—')
      const listed = await sealedData(platform, partner, '/openapi/v1/endpoints/list', {})
      assert.deepEqual(
        (listed.items as { eventTypes: string[] }[]).map((e) => e.eventTypes),
        [['recording.transcript_ready']],
      )
    })

    test('edit its rate, disable and enable it; another one removed after a confirmation', async () => {
      const row = page.locator('tr[data-endpoint-id]').first()
      const endpointId = Number(await row.getAttribute('data-endpoint-id'))
      await page.getByRole('button', { name: `Edit endpoint ${endpointId}` }).click()
      const form = page.getByRole('form', { name: `Edit endpoint ${endpointId}` })
      await form.getByLabel('Max per second (optional)').fill('5')
      await form.getByRole('button', { name: 'Save' }).click()
      await status()
        .filter({ hasText: `Endpoint ${endpointId} saved.` })
        .waitFor()
      await row.locator('td[data-label="Rate"]').getByText('5 / s', { exact: true }).waitFor()
      await page.getByRole('button', { name: `Disable endpoint ${endpointId}` }).click()
      await row.locator('td[data-label="Enabled"]').getByText('disabled', { exact: true }).waitFor()
      await page.getByRole('button', { name: `Enable endpoint ${endpointId}` }).click()
      await row.locator('td[data-label="Enabled"]').getByText('enabled', { exact: true }).waitFor()

      const add = page.getByRole('form', { name: 'Add an endpoint' })
      await add.getByLabel('URL', { exact: true }).fill(`${receiver.url}/spare`)
      await add.getByRole('button', { name: 'Add' }).click()
      const spare = page.locator('tr[data-endpoint-id]').nth(1)
      await spare.waitFor()
      const spareId = Number(await spare.getAttribute('data-endpoint-id'))
      await page.getByRole('button', { name: `Remove endpoint ${spareId}` }).click()
      const dialog = page.getByRole('dialog', { name: `Remove endpoint ${spareId}?` })
      await dialog.getByRole('button', { name: 'Remove' }).click()
      await status()
        .filter({ hasText: `Endpoint ${spareId} removed: 0 deliveries cancelled.` })
        .waitFor()
      await spare.waitFor({ state: 'detached' })
      const listed = await sealedData(platform, partner, '/openapi/v1/endpoints/list', {})
      assert.deepEqual(
        (listed.items as { endpointId: number; maxPerSecond: number; enabled: boolean }[]).map((e) => [
          e.endpointId,
          e.maxPerSecond,
          e.enabled,
        ]),
        [[endpointId, 5, true]],
      )
    })

    test("a failed delivery shows its attempts with the receiver's answer, as text", async () => {
      await ingest(platform, partner.enterpriseId, transcriptRecording('portal-call-1'))
      await eventually(
        async () => {
          const listed = await sealedData(platform, partner, '/openapi/v1/deliveries/list', {
            state: 'failed',
          })
          return (listed.items as unknown[]).length === 1
        },
        WAIT_MS,
        'the delivery failed',
      )
      await section('Deliveries').focus()
      await page.keyboard.press('Enter')
      await heading('Deliveries').waitFor()
      const filter = page.getByRole('form', { name: 'Filter the deliveries' })
      await filter.getByLabel('State').selectOption('failed')
      await filter.getByLabel('Event type').selectOption('recording.transcript_ready')
      await filter.getByRole('button', { name: 'Show' }).click()
      await page.waitForURL(
        (url) => url.hash === '#/deliveries?state=failed&eventType=recording.transcript_ready',
      )
      // The page is drawn again a moment after its address changes: wait for the filter in the new form.
      await page.locator('#filter-state option[value="failed"][selected]').waitFor({ state: 'attached' })
      const row = deliveryRows('portal-call-1')
      await row.locator('.badge').getByText('failed', { exact: true }).waitFor()
      const toggle = row.getByRole('button', { name: /^Show the attempts of delivery \d+$/ })
      await toggle.click()
      const attempts = page.locator('section.timeline')
      await attempts.waitFor()
      assert.equal(await attempts.locator('li.attempt').count(), 2, 'the first attempt and its one retry')
      const first = attempts.locator('li.attempt').first()
      assert.equal(await first.locator('.attempt-status').textContent(), 'HTTP 503')
      const answer = first.locator('pre')
      assert.equal(await answer.textContent(), JSON.stringify({ code: 5030, msg: DOWN }))
      assert.equal(await answer.locator('b').count(), 0, 'the answer is text, never markup')
    })

    test('fix the receiver, replay every failed one since a time: the deliveries are confirmed', async () => {
      failing = false
      await page.getByRole('link', { name: 'Clear the filter' }).click()
      await page.waitForURL((url) => url.hash === '#/deliveries')
      await page.locator('#filter-state option[value="failed"][selected]').waitFor({ state: 'detached' })
      const form = page.getByRole('form', { name: 'Replay failed or unconfirmed deliveries since a time' })
      await form
        .getByLabel('Created since (UTC)')
        .fill(new Date(Date.now() - 3_600_000).toISOString().slice(0, 19))
      await form.getByLabel('unconfirmed').uncheck()
      await form.getByRole('button', { name: 'Replay' }).click()
      const dialog = page.getByRole('dialog', { name: 'Replay these deliveries?' })
      assert.match((await dialog.textContent()) ?? '', /Every failed delivery created since \d{4}-/)
      await page.keyboard.press('Tab')
      await page.keyboard.press('Enter')
      await status()
        .filter({ hasText: /^1 delivery replayed since / })
        .waitFor()
      const row = deliveryRows('portal-call-1')
      // The list reads itself again while a delivery moves, until the receipt confirms it.
      await row.locator('.badge').getByText('confirmed', { exact: true }).waitFor()
    })

    test('the receiver check on a URL whose receiver fails an item: that item is marked failed', async () => {
      await section('Receiver check').click()
      await heading('Receiver check').waitFor()
      const form = page.getByRole('form', { name: 'Check a receiver' })
      const url = form.getByLabel('URL', { exact: true })
      await eventually(
        async () => (await url.inputValue()) === receiver.url,
        WAIT_MS,
        "the endpoint's URL offered",
      )
      await url.fill(checkTarget.url)
      await form.getByRole('button', { name: 'Run the check' }).click()
      const verdict = page.locator('#receiver-check-verdict')
      await verdict.waitFor({ timeout: 90_000 })
      assert.equal(await verdict.textContent(), 'Failed 1 item: deletion.')
      const deletion = page.locator('tr[data-check-item="deletion"]')
      assert.equal(await deletion.getAttribute('class'), 'check-failed')
      assert.equal(await deletion.locator('.badge').textContent(), 'failed')
      assert.equal(
        await deletion.locator('td[data-label="Expected"]').textContent(),
        'a recording.deleted push is acknowledged',
      )
      assert.match(
        (await deletion.locator('td[data-label="What came back"]').textContent()) ?? '',
        /HTTP 500/,
      )
      assert.equal(await page.locator('tr.check-failed').count(), 1)
    })

    test('the service levels: charts drawn, and their figures as text', async () => {
      await section('Service levels').click()
      await heading('Service levels').waitFor()
      const figures = page.locator('#level-figures')
      const figure = (id: string, column: string) =>
        figures.locator(`tr[data-figure="${id}"] td[data-label="${column}"]`)
      await figure('first-attempt-p50', 'Last 24 hours').waitFor()
      assert.match((await figure('first-attempt-p50', 'Last 24 hours').textContent()) ?? '', /^\d+ ms$/)
      assert.match((await figure('first-attempt-p95', 'Last 7 days').textContent()) ?? '', /^\d+ ms$/)
      assert.match(
        (await figure('first-attempt-ack-share', 'Last 24 hours').textContent()) ?? '',
        /^\d+\.\d %$/,
      )
      assert.match((await figure('ack-to-receipt-p95', 'Last 24 hours').textContent()) ?? '', /^\d+ ms$/)
      assert.equal(await figure('backlog', 'Last 24 hours').textContent(), '0')
      for (const id of ['chart-first-attempt', 'chart-ack-share', 'chart-ack-to-receipt', 'chart-backlog']) {
        assert.ok((await page.locator(`#${id} canvas`).count()) > 0, `${id} is drawn`)
      }
      assert.equal(await page.locator('#level-charts').getAttribute('aria-hidden'), null)
      assert.equal(await page.locator('.chart-area').first().getAttribute('aria-hidden'), 'true')
    })

    test('the deliveries a page at a time, by their cursor', async () => {
      for (let n = 2; n <= 21; n++)
        await ingest(platform, partner.enterpriseId, transcriptRecording(`portal-call-${n}`))
      await eventually(
        async () => {
          const listed = await sealedData(platform, partner, '/openapi/v1/deliveries/list', { size: 100 })
          return (listed.items as unknown[]).length === 21
        },
        WAIT_MS,
        'the 21 deliveries',
      )
      await section('Deliveries').click()
      await heading('Deliveries').waitFor()
      const rows = page.locator('tr[data-delivery-id]')
      await rows.first().waitFor()
      assert.equal(await rows.count(), 20)
      await page.getByRole('button', { name: 'Next page' }).click()
      await page.waitForURL((url) => url.hash.startsWith('#/deliveries?cursor='))
      await deliveryRows('portal-call-1').waitFor()
      assert.equal(await rows.count(), 1, 'the oldest, alone on the second page')
      assert.equal(await page.getByRole('button', { name: 'Next page' }).count(), 0)
      await page.getByRole('button', { name: 'First page' }).click()
      await deliveryRows('portal-call-21').waitFor()
    })

    test('rotate the key: the new secret, shown once, seals a query', async () => {
      await section('Key').click()
      await heading('Key').waitFor()
      await page.getByRole('button', { name: 'Rotate the key' }).click()
      await page
        .getByRole('dialog', { name: 'Rotate the key?' })
        .getByRole('button', { name: 'Rotate' })
        .click()
      const secret = page.getByLabel('Secret', { exact: true })
      await secret.waitFor()
      const title = (await page.locator('#new-key h2').textContent()) ?? ''
      const keyVersion = Number(/version (\d+)/.exec(title)?.[1])
      assert.equal(keyVersion, partner.keyVersion + 1)
      assert.match((await page.locator('#new-secret-note').textContent()) ?? '', /previous key stays valid/)
      const renewed = { enterpriseId: partner.enterpriseId, keyVersion, secret: await secret.inputValue() }
      const query = await sealedData(platform, renewed, '/openapi/v1/audios', { audioId: 'portal-call-1' })
      assert.equal(JSON.stringify(query).includes('portal-call-1'), true, JSON.stringify(query))
      partner = renewed
    })

    test("another enterprise's delivery and endpoint ids, by edited requests: 4040 each", async () => {
      const refused = [
        await portalCall(page, 'deliveries/replay', { deliveryId: other.deliveryId }),
        await portalCall(page, 'endpoints/update', { endpointId: other.endpointId, description: 'mine now' }),
        await portalCall(page, 'endpoints/remove', { endpointId: other.endpointId }),
      ]
      for (const reply of refused) {
        assert.equal(reply.status, 404, JSON.stringify(reply.body))
        assert.equal(reply.body.code, 4040, JSON.stringify(reply.body))
      }
      for (const path of [
        '/portal/api/deliveries/replay',
        '/portal/api/endpoints/update',
        '/portal/api/endpoints/remove',
      ]) {
        await expectRefusalLogged(404, path)
      }
    })

    test('a POST refused for its CSRF token alone: the page reads the session again and sends it once more', async () => {
      let edited = 0
      await page.route(
        '**/portal/api/endpoints/list',
        (route) => {
          edited += 1
          return route.continue({ headers: { ...route.request().headers(), 'x-csrf-token': 'stale' } })
        },
        { times: 1 },
      )
      const listed = page.waitForResponse(
        (response) => response.url().endsWith('/portal/api/endpoints/list') && response.status() === 200,
      )
      await section('Endpoints').click()
      await listed
      await heading('Endpoints').waitFor()
      await page.locator('tr[data-endpoint-id]').first().waitFor()
      assert.equal(edited, 1, 'the first POST went with a stale token')
      assert.ok(await page.locator('#nav').isVisible(), 'the page goes on: its session did not end')
      await expectRefusalLogged(401, '/portal/api/endpoints/list')
    })

    test('the main screens at phone width, with nothing to scroll sideways', async () => {
      await page.setViewportSize(PHONE_PORTRAIT)
      for (const [name, ready] of [
        ['Endpoints', 'tr[data-endpoint-id]'],
        ['Deliveries', 'tr[data-delivery-id]'],
        ['Receiver check', '#check-url'],
        ['Service levels', '#chart-backlog canvas'],
        ['Key', '#rotate-key'],
      ] as const) {
        await section(name).click()
        await heading(name).waitFor()
        await page.locator(ready).first().waitFor()
        await fitsWidth(page, name)
      }
      await section('Deliveries').click()
      await page
        .locator('tr[data-delivery-id]')
        .first()
        .getByRole('button', { name: /^Show the attempts/ })
        .click()
      await page.locator('section.timeline pre').first().waitFor()
      await fitsWidth(page, 'a delivery with its attempts')
      await section('Receiver check').click()
      await page.getByLabel('URL', { exact: true }).fill(checkTarget.url)
      await page.getByRole('button', { name: 'Run the check' }).click()
      await page.locator('#receiver-check-verdict').waitFor()
      await fitsWidth(page, "the receiver check's report")
      await page.setViewportSize(DESKTOP)
    })

    test('the spent link is refused with a page that says how to get a new one', async () => {
      const { page: again, context } = await openBrowserContext(browser, consoleErrors)
      try {
        const response = await again.goto(link.url)
        assert.equal(response?.status(), 403)
        assert.match((await again.textContent('body')) ?? '', /link/i)
        await expectRefusalLogged(403, '/portal/enter/')
      } finally {
        await context.close()
      }
    })

    test('a view session reads only: its change controls hidden, the portal refuses them (4031); signed out', async () => {
      const { page: viewer, context } = await openBrowserContext(browser, consoleErrors)
      try {
        await viewer.goto((await linkFromApi(platform, partner, 'view')).url)
        await viewer.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor()
        assert.equal(await viewer.locator('#session-access').textContent(), 'view')
        await viewer.getByText('can view only: ask for a manage link').first().waitFor()
        assert.equal(await viewer.getByRole('form', { name: 'Add an endpoint' }).count(), 0)
        await viewer.locator('tr[data-endpoint-id]').first().waitFor()
        assert.equal(await viewer.getByRole('button', { name: /^(Edit|Remove|Disable) endpoint/ }).count(), 0)
        const refused = await portalCall(viewer, 'key/rotate', {})
        assert.equal(refused.body.code, 4031, JSON.stringify(refused.body))
        assert.match(refused.body.msg ?? '', /view only/)
        await expectRefusalLogged(403, '/portal/api/key/rotate')
        await viewer.getByRole('button', { name: 'Sign out' }).click()
        await viewer.getByRole('heading', { level: 1, name: 'Signed out of the portal' }).waitFor()
        const after = await viewer.evaluate(async () => (await fetch('/portal/api/session')).status)
        assert.equal(after, 401, 'the signed-out session opens nothing')
        await expectRefusalLogged(401, '/portal/api/session')
      } finally {
        await context.close()
      }
    })

    test("an operator's view: the banner, read-only; ended through the admin API, the page stops", async () => {
      const { page: operator, context } = await openBrowserContext(browser, consoleErrors)
      try {
        const minted = await admin.call('createOperatorViewLink', {
          params: { enterpriseId: partner.enterpriseId },
        })
        await operator.goto(minted.url)
        await operator.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor()
        const banner = operator.getByRole('note').filter({ hasText: 'Operator view: read-only' })
        assert.ok(await banner.isVisible(), 'the banner says so')
        assert.equal(await operator.locator('#session-access').textContent(), 'operator view')
        assert.equal(await operator.getByRole('form', { name: 'Add an endpoint' }).count(), 0)
        const { sessionId } = await operator.evaluate(async () => {
          return (await (await fetch('/portal/api/session')).json()) as { sessionId: number }
        })
        await admin.call('endPortalSession', { params: { sessionId } })
        await operator
          .getByRole('navigation', { name: 'Sections' })
          .getByRole('link', { name: 'Deliveries' })
          .click()
        await operator
          .getByRole('heading', { level: 1, name: 'Your portal session has ended — open a new link' })
          .waitFor()
        await expectRefusalLogged(401, '/portal/api/deliveries/list')
        // The page read the session again to tell an ended one from a CSRF token it lacked.
        await expectRefusalLogged(401, '/portal/api/session')
      } finally {
        await context.close()
      }
    })

    test('an expired session: the page says it has ended, and the portal refuses it (4010)', async () => {
      clockOffsetMs = (SESSION_SECONDS + 60) * 1000
      await section('Endpoints').click()
      await heading('Your portal session has ended — open a new link').waitFor()
      assert.ok(await page.locator('#nav').isHidden(), 'no section to open any more')
      await expectRefusalLogged(401, '/portal/api/endpoints/list')
      await expectRefusalLogged(401, '/portal/api/session')
      const refused = await page.evaluate(async () => {
        const response = await fetch('/portal/api/session')
        return { status: response.status, body: (await response.json()) as { code: number } }
      })
      assert.deepEqual([refused.status, refused.body.code], [401, 4010])
      await expectRefusalLogged(401, '/portal/api/session')
    })
  })
}
