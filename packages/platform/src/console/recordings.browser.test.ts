import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
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
import { eventually } from '@earshot/test-kit/eventually'
import type { Browser, Locator, Page } from 'playwright-core'
import { AdminClient } from '../admin-client/admin-client.js'
import { monoWav } from '../demo/demo-audio.js'
import { DEMO_RECORDINGS, seedDemoIfEmpty } from '../demo/demo-seed.js'

/*
 * The console's Recordings screen in Debian's Chromium driven by playwright-core, on the demo enterprise
 * (300 recordings; those with audio have a 3-second chime Earshot stores): page through the list, open a
 * recording (its fields, its transcript's sentences with their times), play its stored audio from the
 * partner listener (another origin, allowed by the page's media-src), upload a new WAV through the form
 * and play the new link, find recordings by audioId and by device, keyboard alone and the phone layout.
 * Any console error the pages cause fails the test; the refusals the test provokes on purpose are
 * accounted for one by one (Chromium logs every 4xx answer as a console error).
 *
 * EARSHOT_CONSOLE_SCREENSHOTS=1 writes docs/console/recordings.png, shown in the operator guide.
 */

/** The browser globals the test reads in the page: the tests compile without the DOM library. */
interface InPageAudio {
  src: string
  currentTime: number
  duration: number
  play(): Promise<void>
  pause(): void
}

interface InPage {
  document: {
    activeElement: { id: string; tagName: string; textContent: string | null } | null
    documentElement: { scrollWidth: number }
    querySelector(selector: string): InPageAudio | null
  }
  innerWidth: number
}

/** A WAV file: 8 kHz, 8-bit mono, `seconds` of a 660 Hz tone. */
function toneWav(seconds: number): Buffer {
  return monoWav(8000, 8000 * seconds, (t) => 0.9 * Math.sin(2 * Math.PI * 660 * t))
}

for (const backend of testBackends) {
  describe(`console recordings in Chromium (${backend})`, { skip: missingChromium, timeout: 120_000 }, () => {
    let platform: TestPlatform
    let browser: Browser
    let page: Page
    let enterpriseId = 0
    /** The link the demo chime of demo-0300 played from, replaced by the upload. */
    let chimeSrc = ''
    const consoleErrors: string[] = []
    const screenshots = backend === testBackends[0] ? SCREENSHOT_DIR : undefined

    const screenshot = (name: string) => screenshotTo(page, screenshots, name)
    const expectRefusalLogged = (status: number, path: string) =>
      takeRefusalLogged(consoleErrors, status, path, WAIT_MS)

    const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true })
    const detail = () => page.getByRole('region', { name: /^Recording / })
    const rows = () => page.locator('tbody tr[data-audio-id]')
    const audioIdsShown = () =>
      rows().evaluateAll((all) => all.map((row) => row.getAttribute('data-audio-id')))
    const player = () => detail().locator('audio')

    /** Finds recordings of the demo enterprise with the form, by audioId and device as given. */
    async function find(filter: { audioId?: string; deviceUid?: string } = {}): Promise<void> {
      const form = page.getByRole('form', { name: 'Find recordings' })
      await form.getByLabel('Enterprise').selectOption(String(enterpriseId))
      await form.getByLabel('Audio ID').fill(filter.audioId ?? '')
      await form.getByLabel('Device UID').fill(filter.deviceUid ?? '')
      await form.getByRole('button', { name: 'Find' }).click()
      const query = new URLSearchParams({ enterpriseId: String(enterpriseId), ...filter })
      await page.waitForURL((url) => url.hash === `#/recordings?${query}`)
    }

    async function open(audioId: string): Promise<void> {
      await page.getByRole('button', { name: `Open recording ${audioId}`, exact: true }).click()
      await page.getByRole('heading', { level: 2, name: `Recording ${audioId}`, exact: true }).waitFor()
    }

    /** Plays the open recording's audio until it has played 0.2 s; its src and duration in seconds. */
    async function play(): Promise<{ src: string; duration: number }> {
      await player().evaluate((audio: InPageAudio) => audio.play())
      await page.waitForFunction(
        () => ((globalThis as unknown as InPage).document.querySelector('audio')?.currentTime ?? 0) > 0.2,
        undefined,
        { polling: 50 },
      )
      return player().evaluate((audio: InPageAudio) => {
        audio.pause()
        return { src: audio.src, duration: audio.duration }
      })
    }

    async function focusedText(): Promise<string> {
      return page.evaluate(() => {
        const active = (globalThis as unknown as InPage).document.activeElement
        return `${active?.tagName}:${active?.textContent}`
      })
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
      platform = await startTestPlatform(backend)
      const demo = await seedDemoIfEmpty(platform.context, Date.now())
      assert.ok(demo, 'the demo was seeded')
      enterpriseId = demo.enterpriseId
      const args = ['--autoplay-policy=no-user-gesture-required']
      ;({ browser, page } = await openConsolePage(consoleErrors, { args }))
    })

    afterEach(() => {
      assert.deepEqual(consoleErrors.splice(0), [], 'the pages logged no error')
    })

    after(async () => {
      await browser?.close()
      await platform?.stop()
    })

    test('the demo enterprise lists its 300 recordings newest first, 20 a page, with the total', async () => {
      await page.goto(`${platform.adminUrl}/console`)
      await signInWithKey(page, platform.adminToken)
      await heading('Overview').waitFor()
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Recordings' }).click()
      await heading('Recordings').waitFor()
      await page.getByText('Choose an enterprise to find its recordings.').waitFor()

      await find()
      await page.getByText(`${DEMO_RECORDINGS} recordings, newest first: page 1 of 15, 20 a page.`).waitFor()
      const first = Array.from({ length: 20 }, (_, i) => `demo-${String(300 - i).padStart(4, '0')}`)
      assert.deepEqual(await audioIdsShown(), first)
      // demo-0300 has only its audio, demo-0299 only a transcript, demo-0298 both.
      const parts = (audioId: string) =>
        page.locator(`tr[data-audio-id="${audioId}"] td[data-label="Parts"]`).textContent()
      assert.equal(await parts('demo-0300'), 'stored audio')
      assert.equal(await parts('demo-0299'), 'transcript')
      assert.equal(await parts('demo-0298'), 'stored audiotranscript')

      await page.getByRole('button', { name: 'Older →' }).click()
      await page.locator('.pager').getByText('Page 2 of 15', { exact: true }).waitFor()
      assert.equal((await audioIdsShown())[0], 'demo-0280')
      assert.equal(await rows().count(), 20)
      await page.getByRole('button', { name: '← Newer' }).click()
      await page.locator('.pager').getByText('Page 1 of 15', { exact: true }).waitFor()
      assert.equal((await audioIdsShown())[0], 'demo-0300')
      assert.ok(await page.getByRole('button', { name: '← Newer' }).isDisabled())
    })

    test('a recording opens beside the list: its fields, its sentences with their times, its player', async () => {
      await open('demo-0298')
      const facts = (await detail().locator('dl').textContent()) ?? ''
      for (const fact of [
        'Audio IDdemo-0298',
        'DeviceWEAR-BETA-07',
        'TitleSite visit notes #298',
        'Record duration3.0 s',
        'Transcript ID100002',
        'Words',
      ]) {
        assert.ok(facts.includes(fact), `${fact} in ${facts}`)
      }
      const sentences = await detail()
        .getByRole('list', { name: 'Sentences' })
        .getByRole('listitem')
        .allTextContents()
      assert.deepEqual(sentences, [
        '0:00.0–0:03.5Please send the figures before Friday.',
        '0:04.0–0:07.5We agreed to try the second option.',
        '0:08.0–0:11.5Battery life was the main complaint.',
        '0:12.0–0:15.5Thanks everyone, that is all for today.',
      ])
      assert.equal(await page.locator('tr[aria-current="true"]').getAttribute('data-audio-id'), 'demo-0298')
      await player().waitFor()
      await fitsWidth()
      await page.evaluate(() =>
        (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0),
      )
      await screenshot('recordings')
    })

    test("found by its audioId, a demo recording's stored chime plays from the partner listener", async () => {
      await find({ audioId: 'demo-0300' })
      await page.getByText('1 recording, newest first: page 1 of 1, 20 a page.').waitFor()
      assert.deepEqual(await audioIdsShown(), ['demo-0300'])
      await open('demo-0300')
      assert.equal(await focusedText(), 'H2:Recording demo-0300', 'the focus moves to the recording')
      await detail().getByText('No transcript.').waitFor()

      const src = (await player().getAttribute('src')) ?? ''
      assert.ok(src.startsWith(`${platform.partnerUrl}/media/v1/`), `${src} is a link to stored audio`)
      assert.notEqual(
        new URL(src).origin,
        new URL(platform.adminUrl).origin,
        'another origin than the console',
      )
      assert.equal(await detail().getByRole('link', { name: src }).getAttribute('href'), src)

      const played = await play()
      assert.equal(played.src, src)
      assert.ok(Math.abs(played.duration - 3) < 0.05, `the chime lasts 3 s, not ${played.duration}`)
      chimeSrc = src
    })

    test('an uploaded WAV replaces the audio: its bytes and SHA-256 shown, the new link plays it', async () => {
      // A refusal first, in the API's words: the upload must be audio.
      const upload = page.getByRole('form', { name: 'Upload its audio' })
      await upload.getByLabel('Audio file').setInputFiles({
        name: 'notes.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('not audio'),
      })
      await upload.getByRole('button', { name: 'Upload' }).click()
      await upload
        .getByRole('alert')
        .filter({ hasText: 'Content-Type must be audio/<subtype>, one of audio/wav' })
        .waitFor()
      assert.match((await upload.getByRole('alert').textContent()) ?? '', /\(\d+, HTTP 415\)/)
      await expectRefusalLogged(415, `/admin/v1/enterprises/${enterpriseId}/recordings/demo-0300/audio`)

      const wav = toneWav(1)
      const sha256 = createHash('sha256').update(wav).digest('hex')
      await upload
        .getByLabel('Audio file')
        .setInputFiles({ name: 'tone.wav', mimeType: 'audio/wav', buffer: wav })
      await upload.getByLabel('Record duration in ms (optional)').fill('1000')
      await upload.getByRole('button', { name: 'Upload' }).click()
      await upload.locator('#upload-sha256').getByText(sha256, { exact: true }).waitFor()
      assert.equal(
        await upload.getByRole('status').textContent(),
        `Stored tone.wav: ${wav.length} bytes of audio/wav, SHA-256 ${sha256}.`,
      )
      assert.equal(await upload.locator('.alert').textContent(), '', 'the refusal is gone')
      await eventually(
        async () => (await focusedText()) === 'BUTTON:Upload',
        WAIT_MS,
        'the focus on the Upload button once done',
      )

      await page.waitForFunction(
        (old) => (globalThis as unknown as InPage).document.querySelector('audio')?.src !== old,
        chimeSrc,
        { polling: 50 },
      )
      await detail().getByText('Record duration1.0 s').waitFor()
      const played = await play()
      assert.notEqual(played.src, chimeSrc)
      assert.ok(played.src.startsWith(`${platform.partnerUrl}/media/v1/`), played.src)
      assert.ok(Math.abs(played.duration - 1) < 0.05, `the tone lasts 1 s, not ${played.duration}`)
      // What the link serves is the file uploaded.
      const served = Buffer.from(await (await fetch(played.src)).arrayBuffer())
      assert.equal(createHash('sha256').update(served).digest('hex'), sha256)
    })

    test('by device: the form, and the device link of a row, list that device only', async () => {
      await find({ deviceUid: 'WEAR-BETA-07' })
      // Devices take turns: every sixth demo recording is this one's.
      await page.getByText('50 recordings, newest first: page 1 of 3, 20 a page.').waitFor()
      const devices = await page.locator('tbody td[data-label="Device"]').allTextContents()
      assert.equal(devices.length, 20)
      assert.deepEqual(new Set(devices), new Set(['WEAR-BETA-07']))
      assert.equal((await audioIdsShown())[0], 'demo-0298')
      // Newest first, each recordedAt shown in UTC with its zone.
      const recorded = page.locator('tbody td[data-label="Recorded"] time')
      const instants = await recorded.evaluateAll((times) =>
        times.map((time) => time.getAttribute('datetime')),
      )
      assert.deepEqual(instants, [...instants].sort().reverse())
      assert.match((await recorded.first().textContent()) ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/)

      await find()
      await page.getByText('300 recordings').waitFor()
      await page.getByRole('link', { name: 'Recordings of device REC-ALPHA-02' }).first().click()
      await page.getByText('50 recordings, newest first').waitFor()
      assert.deepEqual(
        new Set(await page.locator('tbody td[data-label="Device"]').allTextContents()),
        new Set(['REC-ALPHA-02']),
      )
      assert.equal(await page.getByLabel('Device UID').inputValue(), 'REC-ALPHA-02')

      await find({ deviceUid: 'NO-SUCH-DEVICE' })
      await page.getByText('No recording matches.').waitFor()
    })

    test('audio elsewhere is a link, not a player; a transcript-only recording has no audio', async () => {
      const admin = new AdminClient(platform.adminUrl, platform.adminToken)
      const external = 'https://cdn.example/interview.mp3'
      await admin.call('ingestRecording', {
        params: { enterpriseId },
        body: {
          audioId: 'external-1',
          deviceUid: 'REC-ALPHA-01',
          title: 'Interview elsewhere',
          recordedAt: new Date().toISOString(),
          denoiseUrl: external,
          recordDuration: 61_000,
        },
      })
      await find({ audioId: 'external-1' })
      assert.equal(await page.locator('td[data-label="Parts"]').textContent(), 'audio link')
      await open('external-1')
      assert.equal(await detail().getByRole('link', { name: external }).getAttribute('href'), external)
      await detail().getByText('Record duration1 min 01 s').waitFor()
      assert.equal(await player().count(), 0)

      await find({ audioId: 'demo-0299' })
      await open('demo-0299')
      await detail().getByText('No audio part: upload one below.').waitFor()
      assert.equal(await player().count(), 0)
    })

    test('by keyboard alone: find, open a recording, close it, the focus back on its row', async () => {
      await page.getByLabel('Audio ID').fill('demo-0300')
      await page.keyboard.press('Enter')
      await page.waitForURL(/audioId=demo-0300$/)
      await page.getByText('1 recording, newest first').waitFor()
      const openButton = page.getByRole('button', { name: 'Open recording demo-0300' })
      // From the page's heading (focused on arrival), forward to the row's Open button.
      for (let tab = 0; tab < 12 && !(await isFocused(openButton)); tab++) await page.keyboard.press('Tab')
      assert.ok(await isFocused(openButton), 'Tab reaches the Open button')
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { level: 2, name: 'Recording demo-0300' }).waitFor()
      assert.equal(await focusedText(), 'H2:Recording demo-0300')
      await page.keyboard.press('Tab')
      assert.equal(await focusedText(), 'BUTTON:Close')
      await page.keyboard.press('Enter')
      await detail().waitFor({ state: 'hidden' })
      assert.ok(await isFocused(openButton), 'the focus is back on the Open button')
    })

    test('on a 390-px phone the list and an open recording fit the width, and it plays', async () => {
      await page.setViewportSize(PHONE)
      try {
        await find()
        await page.getByText(`${DEMO_RECORDINGS + 1} recordings`).waitFor()
        await fitsWidth()
        await open('demo-0295')
        await fitsWidth()
        const played = await play()
        assert.ok(Math.abs(played.duration - 3) < 0.05)
      } finally {
        await page.setViewportSize(DESKTOP)
      }
    })
  })
}

async function isFocused(locator: Locator): Promise<boolean> {
  return locator.evaluate((element) => element === (globalThis as unknown as InPage).document.activeElement)
}
