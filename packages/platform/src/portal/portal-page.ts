import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { FastifyInstance } from 'fastify'
import * as consoleConstants from '../console/console-constants.js'
import { dataModule, type StaticAsset, sendStaticAsset, staticAsset } from '../http/static-asset.js'
import * as pageConstants from './page-constants.js'

/** The page and its stylesheet, shipped beside dist/ (tsc copies no file that is not TypeScript). */
const PAGE_DIR = new URL('../../portal/', import.meta.url)
/** The portal's modules, as tsc compiles them from the TypeScript beside the page (portal/tsconfig.json). */
const PORTAL_MODULES_DIR = new URL('../portal-browser/', import.meta.url)
/** The console's modules, as compiled: the portal draws with some of them (each imports only what is served here). */
const CONSOLE_MODULES_DIR = new URL('../console-browser/', import.meta.url)
const FROM_CONSOLE = [
  'dom.js',
  'shown-once.js',
  'navigation.js',
  'endpoint-fields.js',
  'endpoint-table.js',
  'check-report.js',
]
/** The console's stylesheet: the portal looks like the console, and adds its own (portal.css). */
const CONSOLE_CSS = new URL('../../console/console.css', import.meta.url)

/**
 * The portal's rules for its pages (the console's): nothing but this origin's own files, no inline script
 * or style, no other origin, no framing. The page a spent link answers with is under them too.
 */
export const PORTAL_PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const JAVASCRIPT = 'text/javascript; charset=utf-8'
const CSS = 'text/css; charset=utf-8'

/**
 * Serves the partner portal's page at `/portal/`: its files, read once at startup and served from memory,
 * revalidated on every load (ETag), under the portal's policy: this origin's own scripts, stylesheets and
 * calls alone (the chart library is served from here too). Only these names are routes, so no request path
 * reaches the file system. Its JSON routes (`/portal/api/…`) and the links into it (`/portal/enter/…`) are
 * routes of their own.
 */
export function portalPage(app: FastifyInstance): void {
  for (const [name, asset] of portalFiles()) {
    const paths = name === 'index.html' ? ['/portal', '/portal/', '/portal/index.html'] : [`/portal/${name}`]
    for (const path of paths) {
      app.get(path, async (request, reply) => sendStaticAsset(request, reply, asset, PORTAL_PAGE_POLICY))
    }
  }
}

/**
 * The page, the stylesheets and the modules it loads: the portal's own, those it shares with the console,
 * the API's names and codes as plain data, and uPlot (its ES module and stylesheet, from its package).
 */
function portalFiles(): [string, StaticAsset][] {
  const read = (dir: URL) => (name: string) => [name, readFileSync(new URL(name, dir))] as const
  const own = readdirSync(PORTAL_MODULES_DIR).filter((name) => name.endsWith('.js'))
  const uplot = createRequire(import.meta.url)
  const scripts = [
    ...own.map(read(PORTAL_MODULES_DIR)),
    ...FROM_CONSOLE.map(read(CONSOLE_MODULES_DIR)),
    ['console-constants.js', dataModule(consoleConstants)] as const,
    ['page-constants.js', dataModule(pageConstants)] as const,
    ['uplot.js', readFileSync(uplot.resolve('uplot/dist/uPlot.esm.js'))] as const,
  ]
  requireServedImports(scripts)
  const pageFile = (name: string) => readFileSync(new URL(name, PAGE_DIR))
  return [
    ['index.html', staticAsset(pageFile('index.html'), 'text/html; charset=utf-8')],
    ['portal.css', staticAsset(pageFile('portal.css'), CSS)],
    ['console.css', staticAsset(readFileSync(CONSOLE_CSS), CSS)],
    ['uplot.css', staticAsset(readFileSync(uplot.resolve('uplot/dist/uPlot.min.css')), CSS)],
    ...scripts.map(([name, body]): [string, StaticAsset] => [name, staticAsset(body, JAVASCRIPT)]),
  ]
}

/**
 * Refuses to start when a module imports one the portal does not serve (a console module it shares came to
 * import the admin API, say): the page would fail in the browser instead.
 */
function requireServedImports(scripts: readonly (readonly [string, Buffer | string])[]): void {
  const served = new Set(scripts.map(([name]) => name))
  for (const [name, body] of scripts) {
    for (const [, imported] of String(body).matchAll(/^(?:import|export)\b[^'"]*?['"]\.\/([^'"]+)['"]/gm)) {
      if (imported && !served.has(imported)) {
        throw new Error(`the portal's ${name} imports ./${imported}, which the portal does not serve`)
      }
    }
  }
}
