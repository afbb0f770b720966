import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { type StaticAsset, sendStaticAsset, staticAsset } from '../http/static-asset.js'
import type { Json } from './openapi.js'

/** Swagger UI's files, served from the installed swagger-ui-dist package: the page loads nothing else. */
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const SWAGGER_UI_FILES = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
} as const

// validatorUrl: null, or Swagger UI would send the document to validator.swagger.io for a badge.
const START_SCRIPT = `window.addEventListener('load', () => {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#reference',
    deepLinking: true,
    validatorUrl: null,
    layout: 'BaseLayout',
  })
})
`

/**
 * Swagger UI sets inline styles and shows data: images; apart from that the page runs its own files
 * and calls this listener ("Try it out"), nothing else.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

let swaggerUiAssets: Map<string, StaticAsset> | undefined

/** Read once per process, on first use, and shared by both listeners (the bundle is 1.5 MB). */
function swaggerUi(): Map<string, StaticAsset> {
  swaggerUiAssets ??= new Map(
    Object.entries(SWAGGER_UI_FILES).map(([name, type]) => [
      name,
      staticAsset(readFileSync(join(SWAGGER_UI, name)), type),
    ]),
  )
  return swaggerUiAssets
}

/**
 * A listener's API reference: its OpenAPI 3.1 document at GET /openapi.json and a page rendering it
 * at GET /docs (Swagger UI, served from this listener). The admin listener serves these without the
 * admin token; they say nothing the source does not.
 */
export function apiReference(app: FastifyInstance, document: Json): void {
  const title = `${(document.info as { title: string }).title} reference`
  const files = new Map<string, StaticAsset>([
    ['/openapi.json', staticAsset(JSON.stringify(document), 'application/json; charset=utf-8')],
    ['/docs', staticAsset(page(title), 'text/html; charset=utf-8')],
    ['/docs/reference.js', staticAsset(START_SCRIPT, 'text/javascript; charset=utf-8')],
  ])
  for (const [path, served] of files)
    app.get(path, async (request, reply) => sendStaticAsset(request, reply, served, CONTENT_SECURITY_POLICY))
  for (const name of Object.keys(SWAGGER_UI_FILES)) {
    app.get(`/docs/${name}`, async (request, reply) =>
      sendStaticAsset(request, reply, swaggerUi().get(name) as StaticAsset, CONTENT_SECURITY_POLICY),
    )
  }
}

function page(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/reference.js"></script>
</body>
</html>
`
}
