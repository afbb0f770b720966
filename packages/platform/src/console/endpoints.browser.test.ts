import assert from 'node:assert/strict'
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
import type { Browser, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'

/*
 * The console's Endpoints screen in Debian's Chromium driven by playwright-core: reached from the
 * enterprises screen, add an endpoint subscribed to transcripts only (refusals shown beside the field they
 * name), see it listed, change its rate, disable and enable it, see a recording's transcript pushed to a
 * loopback receiver in its recent deliveries with their attempts, and remove it once a push failed: the
 * failed delivery is cancelled, and the page says how many were. Desktop and phone layouts. Any console
 * error the pages cause fails the test; the refusals the test provokes on purpose are accounted for one by
 * one (Chromium logs every 4xx answer as a console error).
 *
 * EARSHOT_CONSOLE_SCREENSHOTS=1 writes docs/console/endpoints.png and phone-endpoints.png.
 */

/** The browser globals the test reads in the page: the tests compile without the DOM library. */
interface InPage {
  document: {
    activeElement: { id: string; tagName: string } | null
    documentElement: { scrollWidth: number }
  }
  innerWidth: number
}

function transcriptRecording(audioId: string, withAudio: boolean) {
  return {
    audioId,
    deviceUid: 'DEV-ENDPOINTS',
    title: `Call ${audioId}`,
    recordedAt: new Date().toISOString(),
    ...(withAudio && { denoiseUrl: `https://cdn.example/${audioId}.mp3`, recordDuration: 4000 }),
    transcript: { transcriptId: 7, transcriptText: 'Hello.', sentences: [], durationMs: 900, wordsCount: 1 },
  }
}

for (const backend of testBackends) {
  describe(`console endpoints in Chromium (${backend})`, { skip: missingChromium, timeout: 120_000 }, () => {
    let platform: TestPlatform
    let admin: AdminClient
    let browser: Browser
    let page: Page
    let receiver: TestReceiver
    let enterpriseId = 0
    let endpointId = 0
    let failing = false
    const consoleErrors: string[] = []
    const screenshots = backend === testBackends[0] ? SCREENSHOT_DIR : undefined

    const screenshot = (name: string) => screenshotTo(page, screenshots, name)
    const expectRefusalLogged = (status: number, path: string) =>
      takeRefusalLogged(consoleErrors, status, path, WAIT_MS)

    const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true })
    const addForm = () => page.getByRole('form', { name: 'Add an endpoint' })
    const row = () => page.locator(`tr[data-endpoint-id="${endpointId}"]`)
    const column = (name: string) => row().locator(`td[data-label="${name}"]`)
    const detail = () => page.getByRole('region', { name: `Endpoint ${endpointId}`, exact: true })
    const status = () => page.getByRole('status').filter({ hasText: /\S/ })
    const endpointsPath = () => `/admin/v1/enterprises/${enterpriseId}/endpoints`
    const stored = async () =>
      (
        await admin.call('showEndpoint', {
          params: { enterpriseId, endpointId },
        })
      ).endpoint

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
      admin = new AdminClient(platform.adminUrl, platform.adminToken)
      const created = await admin.createEnterprise('Endpoint Co')
      enterpriseId = created.enterpriseId
      // The partner's receiver: acks and sends the receipt, or refuses with 503 while `failing`.
      const confirm = callbackSender(() => platform.partnerUrl, { ...created, keyVersion: 1 })
      receiver = await startTestReceiver(created.secret, {
        answer: () =>
          failing ? { status: 503, body: { code: 5030 } } : { status: 200, body: { code: 2000 } },
        afterAnswer: (push, answer) => {
          if ((answer.body as { code: number }).code === 2000) void confirm(push.event.audioId)
        },
      })
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

    test("the enterprises screen links to an enterprise's endpoints, none yet", async () => {
      await page.goto(`${platform.adminUrl}/console`)
      await signInWithKey(page, platform.adminToken)
      await heading('Overview').waitFor()
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Enterprises' }).click()
      await page.getByRole('link', { name: `Endpoints of enterprise ${enterpriseId}` }).click()
      await heading('Endpoints').waitFor()
      await page.waitForURL((url) => url.hash === `#/endpoints?enterpriseId=${enterpriseId}`)
      await page.getByText('No endpoint yet: this enterprise pushes nowhere.').waitFor()
      assert.equal(
        await page.getByRole('form', { name: 'Choose an enterprise' }).getByLabel('Enterprise').inputValue(),
        String(enterpriseId),
      )
      const navLink = page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Endpoints' })
      assert.equal(await navLink.getAttribute('aria-current'), 'page')
    })

    test('add one: refusals beside the field they name, then one subscribed to transcripts only', async () => {
      const form = addForm()
      const types = ['audio_ready', 'transcript_ready', 'deleted', 'updated']
      for (const type of types) assert.ok(await form.getByLabel(`recording.${type}`).isChecked(), type)

      const url = form.getByLabel('URL', { exact: true })
      await url.fill('http://169.254.169.254/latest/meta-data')
      await form.getByRole('button', { name: 'Add' }).click()
      const urlAlert = page.locator('#new-endpoint-url-error')
      await urlAlert.filter({ hasText: 'url: 169.254.169.254 is a' }).waitFor()
      assert.equal(await urlAlert.getAttribute('role'), 'alert')
      assert.equal(await url.getAttribute('aria-invalid'), 'true')
      assert.match((await url.getAttribute('aria-describedby')) ?? '', /new-endpoint-url-error/)
      await expectRefusalLogged(400, endpointsPath())

      // No event type at all: refused by the API, shown in the event types' group.
      await url.fill(receiver.url)
      for (const type of types) await form.getByLabel(`recording.${type}`).uncheck()
      await form.getByRole('button', { name: 'Add' }).click()
      const group = form.getByRole('group', { name: 'Event types' })
      await group.getByRole('alert').filter({ hasText: 'eventTypes: must be a non-empty list' }).waitFor()
      assert.equal(await urlAlert.textContent(), '', "the URL's refusal is gone")
      assert.equal(await url.getAttribute('aria-invalid'), null)
      await expectRefusalLogged(400, endpointsPath())

      await form.getByLabel('recording.transcript_ready').check()
      await form.getByLabel('Description (optional)').fill('Transcripts to the archive')
      await form.getByRole('button', { name: 'Add' }).click()
      const added = status().filter({ hasText: /^Endpoint \d+ added/ })
      await added.waitFor()
      endpointId = Number(/\d+/.exec((await added.textContent()) ?? '')?.[0])
      assert.equal(
        await added.textContent(),
        `Endpoint ${endpointId} added: it gets recording.transcript_ready at ${receiver.url}.`,
      )
      await row().waitFor()
      assert.equal(await column('URL').textContent(), receiver.url)
      assert.deepEqual(await row().locator('.event-types li.on .event-name').allTextContents(), [
        'transcript_ready',
      ])
      assert.deepEqual(await row().locator('.event-types li.off .event-name').allTextContents(), [
        'audio_ready',
        'deleted',
        'updated',
      ])
      assert.equal(await column('Description').textContent(), 'Transcripts to the archive')
      assert.equal(await column('Enabled').textContent(), 'enabled')
      assert.equal(await column('Rate').textContent(), 'no limit')
      assert.equal(await column('Health').textContent(), 'healthy')
      assert.equal(await column('Waiting').textContent(), '0')
      // The form is ready for another: empty, every event type checked again.
      assert.equal(await url.inputValue(), '')
      for (const type of types) assert.ok(await form.getByLabel(`recording.${type}`).isChecked(), type)
    })

    test('edit its rate: the form holds its settings, and only the rate changes', async () => {
      await page.getByRole('button', { name: `Edit endpoint ${endpointId}` }).click()
      const form = page.getByRole('form', { name: `Edit endpoint ${endpointId}` })
      await form.waitFor()
      assert.equal(await form.getByLabel('URL', { exact: true }).inputValue(), receiver.url)
      assert.equal(await form.getByLabel('Description (optional)').inputValue(), 'Transcripts to the archive')
      assert.ok(await form.getByLabel('recording.transcript_ready').isChecked())
      assert.ok(!(await form.getByLabel('recording.audio_ready').isChecked()))
      assert.equal(await form.getByLabel('Max per second (optional)').inputValue(), '')

      await form.getByLabel('Max per second (optional)').fill('5')
      await form.getByRole('button', { name: 'Save' }).click()
      await status()
        .filter({ hasText: `Endpoint ${endpointId} saved.` })
        .waitFor()
      await form.waitFor({ state: 'detached' })
      await column('Rate').getByText('5 / s', { exact: true }).waitFor()
      const endpoint = await stored()
      assert.equal(endpoint.maxPerSecond, 5)
      assert.deepEqual(endpoint.eventTypes, ['recording.transcript_ready'])
      assert.equal(endpoint.description, 'Transcripts to the archive')
    })

    test('disable it, then enable it again', async () => {
      await page.getByRole('button', { name: `Disable endpoint ${endpointId}` }).click()
      await status()
        .filter({ hasText: `Endpoint ${endpointId} is disabled` })
        .waitFor()
      await column('Enabled').getByText('disabled', { exact: true }).waitFor()
      assert.equal((await stored()).enabled, false)

      await page.getByRole('button', { name: `Enable endpoint ${endpointId}` }).click()
      await status()
        .filter({ hasText: `Endpoint ${endpointId} is enabled` })
        .waitFor()
      await column('Enabled').getByText('enabled', { exact: true }).waitFor()
      assert.equal((await stored()).enabled, true)
    })

    test('check its receiver: the report lists every item with what came back', async () => {
      await page.getByRole('button', { name: `Check the receiver of endpoint ${endpointId}` }).click()
      const card = page.locator('#receiver-check')
      const verdict = card.locator('#receiver-check-verdict')
      await verdict.waitFor()
      assert.equal(await card.locator('tr[data-check-item]').count(), 9)
      const valid = card.locator('tr[data-check-item="valid-push"]')
      assert.equal(await valid.locator('.badge').textContent(), 'passed')
      assert.match((await valid.textContent()) ?? '', /HTTP 200, code 2000/)
      // This receiver remembers no nonce: the same envelope sent again is acknowledged again, a warning.
      const replayed = card.locator('tr[data-check-item="replayed-envelope"]')
      assert.equal(await replayed.locator('.badge').textContent(), 'warning')
      assert.match((await verdict.textContent()) ?? '', /^Passed: the receiver follows the protocol/)
    })

    test('a recording ingested: its transcript is pushed, shown in the recent deliveries with its attempt', async () => {
      await admin.call('ingestRecording', {
        params: { enterpriseId },
        body: transcriptRecording('ep-call-1', true),
      })
      await page.getByRole('button', { name: `Deliveries of endpoint ${endpointId}` }).click()
      await detail().waitFor()
      const facts = (await detail().locator('dl').first().textContent()) ?? ''
      for (const fact of ['Event typesrecording.transcript_ready', 'Rate5 / s', 'Healthhealthy']) {
        assert.ok(facts.includes(fact), `${fact} in ${facts}`)
      }
      const delivery = detail().getByRole('listitem').filter({ hasText: 'ep-call-1' })
      // The detail refreshes itself while the delivery moves, until the receipt confirms it.
      await delivery.locator('summary .badge').getByText('confirmed', { exact: true }).waitFor()
      assert.match((await delivery.locator('summary').textContent()) ?? '', /transcript_ready · ep-call-1/)
      await delivery.locator('summary').click()
      const attempt = delivery.locator('.attempt').first()
      await attempt.waitFor()
      assert.match((await attempt.textContent()) ?? '', /HTTP 200.*code 2000/)
      // Subscribed to transcripts only: the recording's audio_ready went nowhere.
      assert.deepEqual(
        receiver.received
          .filter((push) => !push.event.audioId.startsWith('check_'))
          .map((push) => push.event.eventType),
        ['recording.transcript_ready'],
      )
      await fitsWidth()
      // The list at the top of the window, the open endpoint's deliveries below it.
      await page
        .getByRole('table', { name: /^Push endpoints/ })
        .evaluate((list: { scrollIntoView(): void }) => list.scrollIntoView())
      await screenshot('endpoints')
    })

    test('on a 390-px phone the list, the check report and the open deliveries fit the width', async () => {
      await page.setViewportSize(PHONE)
      try {
        await row().waitFor()
        await fitsWidth()
        await detail().evaluate((region: { scrollIntoView(): void }) => region.scrollIntoView())
        await fitsWidth()
        await screenshot('phone-endpoints')
      } finally {
        await page.setViewportSize(DESKTOP)
      }
    })

    test('remove it after a push failed: the confirmation, then how many deliveries were cancelled', async () => {
      failing = true
      await admin.call('ingestRecording', {
        params: { enterpriseId },
        body: transcriptRecording('ep-call-2', false),
      })
      // Nothing of the open endpoint was moving: the page learns of the new delivery when refreshed, and
      // then follows it on its own until it fails.
      await detail().getByRole('button', { name: 'Refresh' }).click()
      const delivery = detail().getByRole('listitem').filter({ hasText: 'ep-call-2' })
      await delivery.locator('summary .badge').getByText('failed', { exact: true }).waitFor()
      await column('Health').getByText('failing').waitFor()
      assert.match((await column('Health').textContent()) ?? '', /503/)

      await page.getByRole('button', { name: `Remove endpoint ${endpointId}` }).click()
      const dialog = page.getByRole('dialog', { name: `Remove endpoint ${endpointId}?` })
      assert.match((await dialog.textContent()) ?? '', /deliveries not yet confirmed will be cancelled/)
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await dialog.waitFor({ state: 'detached' })
      await row().waitFor()

      await page.getByRole('button', { name: `Remove endpoint ${endpointId}` }).click()
      await dialog.getByRole('button', { name: 'Remove' }).click()
      await status()
        .filter({
          hasText: `Endpoint ${endpointId} removed: 1 delivery not yet confirmed cancelled.`,
        })
        .waitFor()
      await page.getByText('No endpoint yet: this enterprise pushes nowhere.').waitFor()
      assert.equal(await detail().count(), 0, 'its detail is closed')
      const states = (await admin.listDeliveries({ enterpriseId })).map((d) => `${d.audioId} ${d.state}`)
      assert.deepEqual(states, ['ep-call-2 cancelled', 'ep-call-1 confirmed'])
    })
  })
}
