import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { eventually } from './eventually.js'

/** Debian's Chromium, which playwright-core drives (it downloads no browser). */
export const CHROMIUM = '/usr/bin/chromium'
/** Headless, and quiet: nothing fetched that the tests did not ask for. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
export const DESKTOP = { width: 1280, height: 800 }
export const PHONE = { width: 390, height: 844 }
/** Why the browser tests are skipped here, or false when they can run. */
export const missingChromium =
  !existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM} (apt-get install chromium)`

/** How long a browser test waits for what it expects on a page. */
export const WAIT_MS = 20_000
/** Where the console tests write their screenshots: docs/console/ with EARSHOT_CONSOLE_SCREENSHOTS=1. */
export const SCREENSHOT_DIR =
  process.env.EARSHOT_CONSOLE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../../docs/console/', import.meta.url))
    : undefined

export interface ConsolePage {
  browser: Browser
  context: BrowserContext
  page: Page
}

/**
 * Chromium with one page (desktop size, UTC and en-GB unless told), every console error and uncaught
 * exception it logs pushed to `errors` as `text (url)`, for the test to require none.
 */
export async function openConsolePage(
  errors: string[],
  options: { args?: string[]; timezoneId?: string; locale?: string } = {},
): Promise<ConsolePage> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [...CHROMIUM_ARGS, ...(options.args ?? [])],
  })
  return { browser, ...(await openBrowserContext(browser, errors, options)) }
}

/**
 * Another browser context of the same Chromium (its own cookies and storage: another operator, or the
 * same one on another device) with one page, its errors pushed to `errors` as openConsolePage's are.
 */
export async function openBrowserContext(
  browser: Browser,
  errors: string[],
  options: { timezoneId?: string; locale?: string } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: DESKTOP,
    timezoneId: options.timezoneId ?? 'UTC',
    locale: options.locale ?? 'en-GB',
  })
  const page = await context.newPage()
  page.setDefaultTimeout(WAIT_MS)
  page.on('console', (message) => {
    if (message.type() !== 'error' || isSingleSignOnProbe(message.text(), message.location().url)) return
    errors.push(`${message.text()} (${message.location().url})`)
  })
  page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`))
  return { context, page }
}

/**
 * The sign-in page asks GET /admin/v1/sso whether to offer single sign-on, and treats any failure as no:
 * a platform without that route answers 401 (or 404), which Chromium logs. That refusal is no error of
 * the pages; any other answer of the route still is.
 */
function isSingleSignOnProbe(text: string, url: string): boolean {
  return /status of 40[14]\b/.test(text) && URL.canParse(url) && new URL(url).pathname === '/admin/v1/sso'
}

/**
 * Signs the console in with an API key or the break-glass token (its "Use an API key" form), from the
 * sign-in page shown; `page` is at the console.
 */
export async function signInWithKey(page: Page, key: string): Promise<void> {
  const form = page.getByRole('form', { name: 'Sign in with an API key' })
  if (!(await form.isVisible())) await page.getByText('Use an API key', { exact: true }).click()
  await form.getByLabel('API key').fill(key)
  await form.getByRole('button', { name: 'Sign in with the key' }).click()
}

/** Writes a screenshot of the page to `dir` as NAME.png (nothing when dir is undefined). */
export async function screenshotTo(
  page: { screenshot(options: { path: string; fullPage: boolean }): Promise<unknown> },
  dir: string | undefined,
  name: string,
): Promise<void> {
  if (!dir) return
  await mkdir(dir, { recursive: true })
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: false })
}

/** Takes from `consoleErrors` the line Chromium logs for a refusal a test provoked; fails if it never comes. */
export async function takeRefusalLogged(
  consoleErrors: string[],
  status: number,
  path: string,
  waitMs: number,
): Promise<void> {
  const matches = (line: string) => line.includes(`status of ${status}`) && line.includes(path)
  await eventually(async () => consoleErrors.some(matches), waitMs, `the browser's log of HTTP ${status}`)
  consoleErrors.splice(consoleErrors.findIndex(matches), 1)
}
