#!/usr/bin/env node
// Bundles each command-line program the packages ship (run by `npm run build`, after tsc): a CLI started
// from its compiled modules spends most of its start resolving and compiling them (the schema library
// alone is some 680 files), about 0.6 s a run; one file with its workspace code and small libraries
// inlined starts in about 0.2 s. The larger libraries (the web framework, the databases' drivers, the S3
// client) stay outside, loaded as they are from node_modules when a command needs them; so does
// @earshot/support's storage, whose embedded database starts a worker from a file beside it.
//
// The bundle and its chunks (a command's lazily loaded code) go in dist/bundle/, one folder deep like
// every compiled feature folder, so that a module's paths relative to itself (the migrations, the
// console's files) lead where they lead from dist/<feature>/.
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

await Promise.all(
  CLIS.map(async ({ pkg, entry }) => {
    const outdir = `${root}packages/${pkg}/dist/bundle`
    const { outputFiles } = await build({
      entryPoints: [`${root}packages/${pkg}/${entry}`],
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
      plugins: [externals],
      // The inlined CommonJS libraries (commander, cli-progress) call require for Node's own modules.
      banner: {
        js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
      },
    })
    writeChanged(outdir, outputFiles)
  }),
)
