#!/usr/bin/env node
// The size rules for shipped code in every language of the repository: no file over 400 lines, and no
// function over 80 lines. Biome checks the functions of TypeScript and JavaScript; this checks the files
// of all of them and the functions of the Python and Go kits. Tests, test support and benchmarks are not
// shipped and are not checked. Run by `npm run lint`:
//
//   node scripts/check-sizes.mjs
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 80

const notShipped = [
  /(^|\/)test-kit\//,
  /(^|\/)bench\//,
  /(^|\/)scripts\//,
  /\.test(\.support)?\.ts$/,
  /\/src\/(.*\/)?test\//,
  /\.bench\.ts$/,
  /_test\.go$/,
  /(^|\/)kits\/go\/(platformtests|pgtest)\//,
  /(^|\/)kits\/python\/tests\//,
]
const source = /^(packages\/[^/]+\/(src|console|portal)\/.*\.(ts|js)|kits\/python\/.*\.py|kits\/go\/.*\.go)$/

const files = execFileSync('git', ['ls-files'], { encoding: 'utf8' })
  .split('\n')
  .filter(
    (path) => source.test(path) && !path.endsWith('.d.ts') && !notShipped.some((rule) => rule.test(path)),
  )

const problems = []
for (const path of files) {
  const lines = readFileSync(path, 'utf8').split('\n')
  if (lines.at(-1) === '') lines.pop()
  if (lines.length > MAX_FILE_LINES)
    problems.push(`${path}: ${lines.length} lines (at most ${MAX_FILE_LINES})`)
  const functions = path.endsWith('.py')
    ? pythonFunctions(lines)
    : path.endsWith('.go')
      ? goFunctions(lines)
      : []
  for (const { name, line, length } of functions) {
    if (length > MAX_FUNCTION_LINES)
      problems.push(`${path}:${line}: ${name} is ${length} lines (at most ${MAX_FUNCTION_LINES})`)
  }
}
if (problems.length > 0) {
  console.error(`Shipped code over its size rules:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log(
  `check-sizes: ${files.length} shipped files within ${MAX_FILE_LINES} lines and their functions within ${MAX_FUNCTION_LINES}`,
)

/** Each `def` runs until the next line that is not blank and not indented deeper than it. */
function pythonFunctions(lines) {
  const found = []
  lines.forEach((text, i) => {
    const match = /^(\s*)(?:async\s+)?def\s+(\w+)/.exec(text)
    if (!match) return
    const indent = match[1].length
    let end = i
    for (let j = i + 1; j < lines.length; j++) {
      const next = lines[j]
      if (next.trim() === '') continue
      if (next.length - next.trimStart().length <= indent) break
      end = j
    }
    found.push({ name: match[2], line: i + 1, length: end - i + 1 })
  })
  return found
}

/** gofmt puts a top-level function's closing brace alone at the start of a line. */
function goFunctions(lines) {
  const found = []
  lines.forEach((text, i) => {
    const match = /^func\s+(?:\([^)]*\)\s*)?(\w+)/.exec(text)
    if (!match || text.trimEnd().endsWith('}')) return
    const end = lines.findIndex((next, j) => j > i && next === '}')
    found.push({ name: match[1], line: i + 1, length: (end < 0 ? lines.length : end) - i + 1 })
  })
  return found
}
