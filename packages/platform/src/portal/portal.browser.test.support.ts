import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import type { JsonObject } from '@earshot/protocol'
import type { TestPlatform } from '@earshot/test-kit/backends'
import { partnerFor } from '@earshot/test-kit/calls'
import { runCli } from '@earshot/test-kit/run-cli'
import type { Page } from 'playwright-core'

/*
 * What the portal's Chromium test shares: the partner's ways into the portal (the Node kit's CLI, the
 * sealed partner API), the portal's JSON routes called from inside the page as an edited request would be,
 * and the phone-width check.
 */

/** The Node kit's command line, as built: `earshot-partner portal --json` mints the partner's link. */
const PARTNER_CLI = fileURLToPath(new URL('../../../partner/bin/earshot-partner.js', import.meta.url))

export interface Credentials {
  enterpriseId: number
  keyVersion: number
  secret: string
}

export interface PortalLink {
  url: string
  expiresAt: string
}

/** A link minted by `earshot-partner portal --access ACCESS --json`, as a partner's own script would. */
export async function linkFromCli(
  platform: TestPlatform,
  partner: Credentials,
  access: 'view' | 'manage',
): Promise<PortalLink> {
  const run = await runCli(PARTNER_CLI, ['portal', '--access', access, '--json'], {
    EARSHOT_BASE_URL: platform.partnerUrl,
    EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
    EARSHOT_KEY_VERSION: String(partner.keyVersion),
    EARSHOT_SECRET: partner.secret,
  })
  assert.equal(run.code, 0, `earshot-partner portal failed: ${run.stderr}`)
  return JSON.parse(run.stdout) as PortalLink
}

/** A link minted through the sealed partner API (POST /openapi/v1/portal/link), as a partner's dashboard would. */
export async function linkFromApi(
  platform: TestPlatform,
  partner: Credentials,
  access: 'view' | 'manage',
): Promise<PortalLink> {
  const reply = await partnerFor(platform, partner).call('/openapi/v1/portal/link', { access })
  assert.equal(reply.body.code, 2000, JSON.stringify(reply.body))
  return reply.plaintext as unknown as PortalLink
}

/** A sealed partner-API call's opened data; fails the test on a refusal. */
export async function sealedData(
  platform: TestPlatform,
  partner: Credentials,
  path: string,
  plaintext: JsonObject,
): Promise<JsonObject> {
  const reply = await partnerFor(platform, partner).call(path, plaintext)
  assert.equal(reply.body.code, 2000, `${path}: ${JSON.stringify(reply.body)}`)
  return reply.plaintext as JsonObject
}

export interface PortalReply {
  status: number
  body: { code?: number; msg?: string; requestId?: string; [key: string]: unknown }
}

/**
 * Calls /portal/api/<action> from inside the page with the session's cookie and CSRF token, a body of the
 * test's choosing: a request edited by hand, as the page would never send it.
 */
export function portalCall(page: Page, action: string, body: unknown): Promise<PortalReply> {
  return page.evaluate(
    async ({ action, body }) => {
      const session = (await (await fetch('/portal/api/session')).json()) as { csrfToken?: string }
      const response = await fetch(`/portal/api/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrfToken ?? '' },
        body: JSON.stringify(body),
      })
      return { status: response.status, body: (await response.json()) as PortalReply['body'] }
    },
    { action, body },
  )
}

/** The browser globals the test reads in the page: the tests compile without the DOM library. */
interface InPage {
  document: { documentElement: { scrollWidth: number } }
  innerWidth: number
}

/** The page is no wider than the window: nothing to scroll sideways. */
export async function fitsWidth(page: Page, what: string): Promise<void> {
  const { scroll, inner } = await page.evaluate(() => {
    const w = globalThis as unknown as InPage
    return { scroll: w.document.documentElement.scrollWidth, inner: w.innerWidth }
  })
  assert.ok(scroll <= inner, `${what}: the page is ${scroll} px wide in a ${inner} px window`)
}

/** A recording whose transcript is ready: ingesting it makes a recording.transcript_ready event. */
export function transcriptRecording(audioId: string): JsonObject {
  return {
    audioId,
    deviceUid: 'DEV-PORTAL',
    title: `Call ${audioId}`,
    recordedAt: new Date().toISOString(),
    transcript: { transcriptId: 7, transcriptText: 'Hello.', sentences: [], durationMs: 900, wordsCount: 1 },
  }
}
