#!/usr/bin/env node
// Runs the compiled tests of every package with node:test on any Node ≥ 20.18. `node --test DIR`
// means "every test file under DIR" on Node 20 but "DIR as one module" on Node 22 and later, so the
// files are listed here. Exits non-zero when a test fails or when no test ran at all.
//
// A file whose process ends on its own has no failing test to show, so its exit code or signal and the
// end of its stderr are printed. One killed by a signal (a crash of the runtime such as V8's, which
// PGlite's WebAssembly has been seen to trigger, or the kernel's OOM killer) is run once more, by
// itself: its second run stands in for the crash, and what its first run reported still counts (a
// process killed may not have reported its last results).
//
// Test files run in parallel, one more than the machine has cores: a file often waits (on a child process,
// a timer, a socket), and the one more keeps the cores busy then (docs/development.md has the measurements).
// The fault suite runs as many as there are cores: its files restart servers on deadlines. --concurrency N
// sets another number.
//
// npm's scripts start it as `node --liftoff-only scripts/run-tests.mjs`, and node:test starts each file's
// process with this one's flags (docs/development.md says why).
//
// --skip SUBSTRING (repeatable) leaves out the files whose path holds it. --backend-suites runs only the
// files whose suites run on the backends the run chooses (they name testBackends or oneTestBackend): CI's
// second run, on the other backend, needs no others.
//
//   node scripts/run-tests.mjs [--only-faults | --no-faults] [--backend-suites] [--concurrency N]
//                              [--skip substring ...] [path-substring ...]
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { run } from 'node:test'
import { spec } from 'node:test/reporters'
import { parseArgs } from 'node:util'
import { countTests, describeCount } from './count-tests.mjs'

const root = new URL('..', import.meta.url).pathname
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'only-faults': { type: 'boolean' },
    'no-faults': { type: 'boolean' },
    'backend-suites': { type: 'boolean' },
    concurrency: { type: 'string' },
    skip: { type: 'string', multiple: true, default: [] },
  },
})

const concurrency = Number(values.concurrency ?? availableParallelism() + (values['only-faults'] ? 0 : 1))
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`run-tests: --concurrency must be a positive integer, not ${values.concurrency}`)
  process.exit(2)
}

/** The files that take a minute or more: the other languages' kit suites, browser tests, the largest end-to-end ones. */
const LONG = [
  /language-kits/,
  /\.browser\.test\.js$/,
  /erasure-everywhere/,
  /listen-command/,
  /earshot-partner\.test/,
]
const isLong = (file) => LONG.some((pattern) => pattern.test(file))

// Fault-injection suites (*.faults.test.js) restart services and kill processes: `npm run test:faults`.
const isFaults = (file) => file.endsWith('.faults.test.js')
const choosesBackend = (file) => /\b(testBackends|oneTestBackend)\b/.test(readFileSync(file, 'utf8'))
const files = readdirSync(join(root, 'packages'))
  .flatMap((pkg) => {
    const dist = join(root, 'packages', pkg, 'dist')
    try {
      return readdirSync(dist, { recursive: true }).map((file) => join(dist, String(file)))
    } catch {
      return []
    }
  })
  .filter((file) => file.endsWith('.test.js'))
  .filter((file) => (values['only-faults'] ? isFaults(file) : !values['no-faults'] || !isFaults(file)))
  .filter((file) => positionals.length === 0 || positionals.some((part) => file.includes(part)))
  .filter((file) => !values.skip.some((part) => file.includes(part)))
  .filter((file) => !values['backend-suites'] || choosesBackend(file))
  .sort()
  // The files that take longest start first, so that the run does not end with one of them alone.
  .sort((a, b) => Number(isLong(b)) - Number(isLong(a)))

if (files.length === 0) {
  console.error('run-tests: no test file matched (is the build missing? run `npm run build`)')
  process.exit(1)
}
console.log(
  `run-tests: ${files.length} test files on Node ${process.version}, ${concurrency} at a time; ${describeCount(countTests())}`,
)

const STDERR_LINES_KEPT = 40

/**
 * Runs the files, the spec report to stdout. Resolves to the tests run and failed (a file whose process
 * died counts as one failed test), and the files whose process ended by itself: how, and the end of
 * their stderr. A test's events name the module that declared it, which may not be the test file, so
 * they are counted as a whole.
 */
const durations = new Map()

function runFiles(files) {
  const tally = { ran: 0, failed: 0 }
  const stderrTails = new Map()
  const ended = []
  const stream = run({ files, concurrency })
  stream.on('test:stderr', ({ file, message }) => {
    const lines = [...(stderrTails.get(file) ?? []), ...message.replace(/\n$/, '').split('\n')]
    stderrTails.set(file, lines.slice(-STDERR_LINES_KEPT))
  })
  stream.on('test:pass', ({ details, file, nesting }) => {
    if (details?.type !== 'suite') tally.ran++
    if (nesting === 0) durations.set(file, (durations.get(file) ?? 0) + (details?.duration_ms ?? 0))
  })
  stream.on('test:fail', ({ details, file }) => {
    if (details?.type !== 'suite') {
      tally.ran++
      tally.failed++
    }
    const { error } = details ?? {}
    if (error?.failureType === 'testCodeFailure' && (error.exitCode != null || error.signal != null)) {
      const how = error.signal ? `signal ${error.signal}` : `exit code ${error.exitCode}`
      ended.push({ file, signal: error.signal, how })
    }
  })
  const report = stream.compose(spec)
  report.pipe(process.stdout, { end: false })
  return new Promise((resolve) => {
    report.once('end', () => {
      for (const end of ended) end.tail = (stderrTails.get(end.file) ?? []).join('\n').trim() || '(nothing)'
      resolve({ ...tally, ended })
    })
  })
}

/** Names each file whose process ended by itself, how, and the end of its stderr. */
function reportEnded(ended, again = '') {
  for (const { file, how, tail } of ended) {
    console.error(`run-tests: ${file}'s process ended with ${how}${again}; the end of its stderr:\n${tail}\n`)
  }
}

const first = await runFiles(files)
reportEnded(first.ended)
// A crashed file's own failure is replaced by its second run; the failures it reported before still count.
const crashed = first.ended.filter(({ signal }) => signal != null).map(({ file }) => file)
let ran = first.ran - crashed.length
let failed = first.failed - crashed.length
if (crashed.length > 0) {
  console.error(
    `run-tests: running once more, by itself, each file killed by a signal: ${crashed.join(', ')}`,
  )
  for (const file of crashed) {
    const again = await runFiles([file])
    ran += again.ran
    failed += again.failed
    reportEnded(again.ended, ' again')
  }
}

const slowest = [...durations].sort((a, b) => b[1] - a[1]).slice(0, 12)
console.log(
  `run-tests: the slowest files: ${slowest.map(([file, ms]) => `${file.slice(root.length)} ${(ms / 1000).toFixed(0)} s`).join(', ')}`,
)
const rerun = crashed.length > 0 ? ` (${crashed.length} of them run twice after a crash)` : ''
const summary = `run-tests: ${ran} tests ran, ${failed} failed, in ${files.length} files${rerun}`
if (ran === 0) {
  console.error(`${summary}: no test ran`)
  process.exitCode = 1
} else if (failed > 0) {
  console.error(summary)
  process.exitCode = 1
} else console.log(summary)
