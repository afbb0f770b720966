import type { FastifyReply } from 'fastify'
import { PORTAL_PAGE_POLICY } from './portal-page.js'

/** The page a link that cannot be spent answers with (403): why, and how to get a new one. */
function refusedLinkPage(linkMinutes: number): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="no-referrer" />
    <title>Portal link used or expired · Earshot</title>
    <link rel="icon" href="data:," />
  </head>
  <body>
    <main>
      <h1>This portal link cannot be opened</h1>
      <p>It was already used, or it has expired: a portal link opens the portal once, within ${linkMinutes} ${
        linkMinutes === 1 ? 'minute' : 'minutes'
      } of being made. If you opened it a moment ago, your portal is already open in that tab.</p>
      <h2>Get a new link</h2>
      <ul>
        <li>Ask your operator for a new portal link.</li>
        <li>Run <code>earshot-partner portal</code> with your enterprise's credentials.</li>
        <li>Or call <code>POST /openapi/v1/portal/link</code> from your own system, sealed like every partner request: it answers <code>{url, expiresAt}</code>.</li>
      </ul>
    </main>
  </body>
</html>
`
}

/** Answers a link that cannot be spent: 403 and the page (text alone), never cached, under the portal's policy. */
export function sendRefusedLink(reply: FastifyReply, linkSeconds: number): FastifyReply {
  return reply
    .code(403)
    .headers({
      'cache-control': 'no-store',
      'content-security-policy': PORTAL_PAGE_POLICY,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
    })
    .type('text/html; charset=utf-8')
    .send(refusedLinkPage(Math.max(1, Math.round(linkSeconds / 60))))
}
