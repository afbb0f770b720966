#!/usr/bin/env node
// Bundles each command-line program the packages ship (run by `npm run build`, after tsc): a CLI started
// from its compiled modules spends most of its start resolving and compiling them (the schema library
// alone is some 680 files), about 0.6 s a run; one file with its workspace code and small libraries
// inlined starts in about 0.2 s. The larger libraries (the web framework, the databases' drivers, the S3
// client) stay outside, loaded as they are from node_modules when a command needs them; so does
// @earshot/support's storage, whose embedded database starts a worker from a file beside it.
//
// What a command loads only when it runs (`await import(...)` of a workspace module: the platform that
// `earshot serve` starts) is bundled apart, in a second build: modules the commands and the server share
// (the protocol's index) would otherwise carry into the commands' own chunks everything the server uses
// of them, the schema library with it, and every command would load it. The protocol declares itself
// free of side effects, so a command that uses its error codes loads those and not its schemas.
//
// The bundles and their chunks go in dist/bundle/, one folder deep like every compiled feature folder,
// so that a module's paths relative to itself (the migrations, the console's files) lead where they lead
// from dist/<feature>/.
//
//   node scripts/bundle-clis.mjs
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { build } from 'esbuild'

const root = new URL('..', import.meta.url).pathname
const CLIS = [
  { pkg: 'platform', entry: 'dist/cli/earshot.js' },
  { pkg: 'partner', entry: 'dist/cli/earshot-partner.js' },
]
/** Bare imports inlined: the workspace's protocol and CLI helpers, and the libraries every command loads. */
const INLINED = /^(typebox|@earshot\/protocol|@earshot\/support\/cli|commander|cli-progress|ipaddr\.js)(\/|$)/

/**
 * The admin client's operations table as plain data, as the console's pages load it: its own module reads
 * the table from the admin API's contracts, whose schemas no command needs.
 */
const adminOperationsAsData = {
  name: 'admin-operations-as-data',
  setup(build) {
    build.onLoad({ filter: /\/admin-client\/admin-operations\.js$/ }, async ({ path }) => {
      const { adminOperationsModule } = await import(path.replace(/\.js$/, '-data.js'))
      return { contents: adminOperationsModule(), loader: 'js' }
    })
  },
}

/** Leaves each workspace module the commands import lazily to the second build, noting it in `apart`. */
function bundledApart(apart) {
  return {
    name: 'bundled-apart',
    setup(build) {
      build.onResolve({ filter: /^\./ }, ({ kind, path, resolveDir }) => {
        if (kind !== 'dynamic-import') return undefined
        const file = `${resolveDir}/${path}`
        const name = basename(path, '.js')
        if (apart.has(name) && apart.get(name) !== file) throw new Error(`two lazy imports are named ${name}`)
        apart.set(name, file)
        return { path: `./${name}.js`, external: true }
      })
    },
  }
}

/** Leaves a bare import outside the bundle unless it is one INLINED names. */
const externals = {
  name: 'externals',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, ({ path }) =>
      INLINED.test(path) ? undefined : { path, external: true },
    )
  },
}

/**
 * Writes the files that differ from those in place, each to a file beside it renamed over it, then
 * removes what the build no longer makes. A build while CLIs run (a test that runs `npm start`, which
 * builds first) never leaves one a missing or half-written file.
 */
function writeChanged(outdir, outputFiles) {
  mkdirSync(outdir, { recursive: true })
  for (const { path, contents } of outputFiles) {
    let same = false
    try {
      same = readFileSync(path).equals(contents)
    } catch {}
    if (same) continue
    const partial = `${dirname(path)}/.${basename(path)}.${process.pid}`
    writeFileSync(partial, contents)
    renameSync(partial, path)
  }
  // Another build's partial files (dot files) are its own to rename.
  const made = new Set(outputFiles.map(({ path }) => basename(path)))
  for (const name of readdirSync(outdir)) {
    if (!made.has(name) && !name.startsWith('.')) rmSync(`${outdir}/${name}`, { force: true })
  }
}

const options = (outdir) => ({
  outdir,
  write: false,
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
  // The inlined CommonJS libraries (commander, cli-progress) call require for Node's own modules.
  banner: {
    js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
  },
})

await Promise.all(
  CLIS.map(async ({ pkg, entry }) => {
    const outdir = `${root}packages/${pkg}/dist/bundle`
    const apart = new Map()
    const commands = await build({
      ...options(outdir),
      entryPoints: [`${root}packages/${pkg}/${entry}`],
      plugins: [adminOperationsAsData, bundledApart(apart), externals],
    })
    const lazy = await build({
      ...options(outdir),
      entryPoints: Object.fromEntries(apart),
      plugins: [externals],
    })
    writeChanged(outdir, [...commands.outputFiles, ...lazy.outputFiles])
  }),
)
