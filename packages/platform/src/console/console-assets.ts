import { readdirSync, readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { dataModule, type StaticAsset, sendStaticAsset, staticAsset } from '../http/static-asset.js'
import * as consoleConstants from './console-constants.js'

/** The page and its stylesheet, shipped beside dist/ (tsc copies no file that is not TypeScript). */
const PAGE_DIR = new URL('../../console/', import.meta.url)
/** The console's modules, as tsc compiles them from the TypeScript beside the page (console/tsconfig.json). */
const MODULES_DIR = new URL('../console-browser/', import.meta.url)
/** The admin client the CLI uses too, as compiled: the console loads it as it is. */
const CLIENT_DIR = new URL('../admin-client/', import.meta.url)
const FROM_CLIENT = ['admin-client.js', 'admin-responses.js']

const JAVASCRIPT = 'text/javascript; charset=utf-8'

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
  for (const [name, asset] of consoleFiles(made)) {
    const paths =
      name === 'index.html'
        ? [mountPath, `${mountPath}/`, `${mountPath}/index.html`]
        : [`${mountPath}/${name}`]
    for (const path of paths) {
      app.get(path, async (request, reply) => sendStaticAsset(request, reply, asset, CONTENT_SECURITY_POLICY))
    }
  }
}

/**
 * The page, its stylesheet, and the modules it loads: the console's own, the admin client's, and those made
 * at startup; among them the API's names and codes the pages use, as plain data (console-constants.ts).
 */
function consoleFiles(made: Record<string, string>): [string, StaticAsset][] {
  const read = (dir: URL) => (name: string) => [name, readFileSync(new URL(name, dir))] as const
  const modules = readdirSync(MODULES_DIR).filter((name) => name.endsWith('.js'))
  const scripts = [
    ...modules.map(read(MODULES_DIR)),
    ...FROM_CLIENT.map(read(CLIENT_DIR)),
    ['console-constants.js', dataModule(consoleConstants)] as const,
    ...Object.entries(made),
  ]
  const pageFile = (name: string) => readFileSync(new URL(name, PAGE_DIR))
  return [
    ['index.html', staticAsset(pageFile('index.html'), 'text/html; charset=utf-8')],
    ['console.css', staticAsset(pageFile('console.css'), 'text/css; charset=utf-8')],
    ...scripts.map(([name, body]): [string, StaticAsset] => [name, staticAsset(body, JAVASCRIPT)]),
  ]
}
