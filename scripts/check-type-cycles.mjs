#!/usr/bin/env node
// The dependency rules of .dependency-cruiser.cjs (no cycle between modules, nor between folders), applied
// to the TypeScript sources with their `import type` counted: the compiled JavaScript that
// `npm run check:dependencies` reads has them erased, and dependency-cruiser cannot parse the sources of
// TypeScript 7. So each source is mirrored as a JavaScript module holding only its imports and re-exports,
// every one as a plain `import`, and dependency-cruiser checks the mirror. Tests, test support and
// benchmarks are left out, as there. Run by `npm run lint`:
//
//   node scripts/check-type-cycles.mjs [ROOT]     (ROOT: a tree with packages/*/src; this repository by default)
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const repository = fileURLToPath(new URL('..', import.meta.url))
const root = process.argv[2] ?? repository
const notChecked = /\.test(\.support)?\.ts$|\/test\/|\.bench\.ts$|\.d\.ts$/
// `import … from '…'`, `import type …`, `export … from '…'` and `import '…'`, each at the start of a line.
const specifiers = /^(?:import|export)\b[^'"]*?(?:\bfrom\s+)?['"]([^'"]+)['"]/gm

const mirror = mkdtempSync(join(tmpdir(), 'earshot-type-imports-'))
try {
  const sources = sourcesUnder(root)
  for (const source of sources) {
    const text = readFileSync(join(root, source), 'utf8')
    const imports = [...text.matchAll(specifiers)].map((match) => `import '${match[1]}'`)
    const target = join(mirror, source.replace(/\.ts$/, '.js'))
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, `${imports.join('\n')}\n`)
  }
  const cruise = spawnSync(
    join(repository, 'node_modules/.bin/depcruise'),
    ['packages', '--config', join(repository, '.dependency-cruiser.cjs'), '--output-type', 'err'],
    { cwd: mirror, encoding: 'utf8' },
  )
  if (cruise.status !== 0) {
    console.error(`Type imports count too, and with them:\n${cruise.stdout}${cruise.stderr}`)
    process.exit(1)
  }
  console.log(
    `check-type-cycles: ${sources.length} sources, within the dependency rules with their type imports counted`,
  )
} finally {
  rmSync(mirror, { recursive: true, force: true })
}

/** Every TypeScript source of a package (packages/NAME/src/…), relative to base. */
function sourcesUnder(base) {
  return readdirSync(join(base, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => walk(join(base, 'packages', entry.name, 'src')))
    .map((path) => relative(base, path))
    .filter((path) => path.endsWith('.ts') && !notChecked.test(path))
}

function walk(directory) {
  let entries
  try {
    entries = readdirSync(directory, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((entry) =>
    entry.isDirectory() ? walk(join(directory, entry.name)) : [join(directory, entry.name)],
  )
}
