import { existsSync } from 'node:fs'

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
