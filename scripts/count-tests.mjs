#!/usr/bin/env node
// Counts, in the sources git tracks, the tests declared and the assertions written: node:test's test()
// and it() with assert.*() and assert(), Python's test_ methods with self.assert*() and assert, Go's Test
// functions with t.Error*/t.Fatal*. A change meant to make the suite faster, not smaller, keeps both
// counts; `npm test` prints them first (scripts/run-tests.mjs), and this prints them alone:
//
//   node scripts/count-tests.mjs
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const root = new URL('..', import.meta.url).pathname

const LANGUAGES = [
  {
    files: /\.test(\.support)?\.ts$/,
    tests: /\b(test|it)(\.(skip|only|todo))?\(\s*['"`]/g,
    assertions: /\bassert(\.\w+)*\(/g,
  },
  {
    files: /(^|\/)test_[^/]*\.py$/,
    tests: /^\s*(async )?def test_\w+/gm,
    assertions: /\bself\.assert\w+\(|^\s*assert /gm,
  },
  { files: /_test\.go$/, tests: /^func Test\w+\(/gm, assertions: /\bt\.(Error|Errorf|Fatal|Fatalf)\(/g },
]

/** Test files, tests and assertions in the repository at `root`; undefined outside a git checkout. */
export function countTests() {
  let tracked
  try {
    tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8', stdio: 'pipe' }).split('\n')
  } catch {
    return undefined
  }
  const count = { files: 0, tests: 0, assertions: 0 }
  for (const { files, tests, assertions } of LANGUAGES) {
    for (const path of tracked.filter((file) => files.test(file))) {
      const text = readFileSync(root + path, 'utf8')
      count.files++
      count.tests += text.match(tests)?.length ?? 0
      count.assertions += text.match(assertions)?.length ?? 0
    }
  }
  return count
}

export const describeCount = (count) =>
  count
    ? `${count.tests} tests and ${count.assertions} assertions written in ${count.files} test files (TypeScript, Python, Go)`
    : 'no git checkout to count the tests written in'

if (process.argv[1] === new URL(import.meta.url).pathname) console.log(describeCount(countTests()))
