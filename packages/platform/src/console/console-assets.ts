import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { sendStaticAsset, staticAsset } from '../http/static-asset.js'

/** The console's files, shipped beside dist/ (tsc copies no file that is not TypeScript). */
const CONSOLE_DIR = new URL('../../console/', import.meta.url)
/** The admin client the CLI uses too, as compiled: the console loads it as it is. */
const CLIENT_DIR = new URL('../admin-client/', import.meta.url)
const FROM_CLIENT = new Set(['admin-client.js', 'admin-responses.js'])

const JAVASCRIPT = 'text/javascript; charset=utf-8'
const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  // The shell, then a module per page and the two they are built from.
  'console.js': JAVASCRIPT,
  'overview.js': JAVASCRIPT,
  'enterprises.js': JAVASCRIPT,
  'endpoints.js': JAVASCRIPT,
  'endpoint-form.js': JAVASCRIPT,
  'receiver-check.js': JAVASCRIPT,
  'recordings.js': JAVASCRIPT,
  'recording-detail.js': JAVASCRIPT,
  'deliveries.js': JAVASCRIPT,
  'import.js': JAVASCRIPT,
  'navigation.js': JAVASCRIPT,
  'dom.js': JAVASCRIPT,
  'admin-api.js': JAVASCRIPT,
  'admin-client.js': JAVASCRIPT,
  'admin-responses.js': JAVASCRIPT,
} as const

/**
 * The pages may run their own script and stylesheet and call this listener, nothing else: no inline
 * script or style, no other origin, no framing. Media alone may come from elsewhere: the recordings page
 * plays stored audio from its signed link on the partner listener (another port, or EARSHOT_PUBLIC_URL),
 * an origin not known when these routes are made; audio and video run no script.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "media-src 'self' http: https:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * Serves the operators' console at `/console`: its files, read once at startup and served from memory.
 * Only these names are routes, so no request path ever reaches the file system. They are revalidated
 * on every load (ETag), so an upgraded platform serves its new console at once. `made` are modules made
 * at startup rather than read (the admin operations' table, from the contracts), by name.
 */
export function consoleAssets(app: FastifyInstance, mountPath: string, made: Record<string, string>): void {
  const files = { ...FILES, ...Object.fromEntries(Object.keys(made).map((name) => [name, JAVASCRIPT])) }
  for (const [name, contentType] of Object.entries(files)) {
    const file = new URL(name, FROM_CLIENT.has(name) ? CLIENT_DIR : CONSOLE_DIR)
    const asset = staticAsset(made[name] ?? readFileSync(file), contentType)
    const paths =
      name === 'index.html'
        ? [mountPath, `${mountPath}/`, `${mountPath}/index.html`]
        : [`${mountPath}/${name}`]
    for (const path of paths) {
      app.get(path, async (request, reply) => sendStaticAsset(request, reply, asset, CONTENT_SECURITY_POLICY))
    }
  }
}
