import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'

const bundle = new URL('../bundle/', import.meta.url)

/** A file of the CLI's bundle and every chunk it imports statically, as Node loads them at start. */
function loadedAtStart(file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return ''
  seen.add(file)
  const text = readFileSync(new URL(file, bundle), 'utf8')
  const chunks = [...text.matchAll(/ from "\.\/(chunk-\w+\.js)";$/gm)].map(([, chunk]) => chunk)
  return [text, ...chunks.map((chunk) => loadedAtStart(chunk as string, seen))].join('\n')
}

test("earshot's client commands start without the server and the schema library", { timeout: 10_000 }, () => {
  const atStart = loadedAtStart('earshot.js')
  // esbuild heads each module it inlines with its path.
  assert.match(atStart, /^\/\/ packages\/platform\/dist\/cli\/client-command\.js$/m)
  assert.match(atStart, /^\/\/ packages\/protocol\/dist\/error-catalogue\.js$/m)
  assert.doesNotMatch(atStart, /^\/\/ node_modules\/typebox\//m)
  assert.doesNotMatch(atStart, /^\/\/ node_modules\/cli-progress\//m)
  assert.doesNotMatch(atStart, /^\/\/ packages\/platform\/dist\/(platform|listeners\/[\w-]+)\.js$/m)
  // `earshot serve` loads the platform, bundled apart, when it runs.
  assert.match(atStart, /import\("\.\/platform\.js"\)/)
})
