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
// Several files share a process, one after another, each in a suite of its own named by its path (its
// top-level hooks stay its own): a process's start, its module loading and PGlite's first open cost more CPU
// than most files' tests. The files are dealt into about six processes per parallel slot, so that the run
// does not end on one long process; the longest files get a process each. --files-per-process N deals N
// to a process instead (1: a process per file). A file must leave the environment as it found it
// (shared-test-process.mjs checks). A process killed by a signal has each of its files run again by itself.
//
// npm's scripts start it as `node --liftoff-only scripts/run-tests.mjs`, and node:test starts each file's
// process with this one's flags (docs/development.md says why).
//
// --skip SUBSTRING (repeatable) leaves out the files whose path holds it. --backend-suites runs only the
// files whose suites run on the backends the run chooses (they name testBackends or oneTestBackend): CI's
// second run, on the other backend, needs no others.
//
//   node scripts/run-tests.mjs [--only-faults | --no-faults] [--backend-suites] [--concurrency N]
//                              [--files-per-process N] [--skip substring ...] [path-substring ...]
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { run } from 'node:test'
import { spec } from 'node:test/reporters'
import { fileURLToPath, pathToFileURL } from 'node:url'
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
    'files-per-process': { type: 'string' },
    skip: { type: 'string', multiple: true, default: [] },
  },
})

/** The option's value as a positive integer, or the default; the run stops on anything else. */
function positiveInteger(name, fallback) {
  const number = Number(values[name] ?? fallback)
  if (Number.isInteger(number) && number >= 1) return number
  console.error(`run-tests: --${name} must be a positive integer, not ${values[name]}`)
  process.exit(2)
}
const concurrency = positiveInteger('concurrency', availableParallelism() + (values['only-faults'] ? 0 : 1))
const filesPerProcess = values['files-per-process'] && positiveInteger('files-per-process')

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
/** Processes dealt per file run in parallel: enough that the run does not end on one long process. */
const PROCESSES_PER_SLOT = 6

/** The files dealt into processes: the long ones a process each, first; the others in turn round the rest. */
function intoProcesses(files) {
  const others = files.filter((file) => !isLong(file))
  const count = filesPerProcess
    ? Math.ceil(others.length / filesPerProcess)
    : Math.min(others.length, concurrency * PROCESSES_PER_SLOT)
  const shared = Array.from({ length: count }, (_, slot) =>
    others.filter((_, index) => index % count === slot),
  )
  return [...files.filter(isLong).map((file) => [file]), ...shared]
}

const entries = mkdtempSync(join(tmpdir(), 'earshot-test-processes-'))
process.on('exit', () => rmSync(entries, { recursive: true, force: true }))
const relative = (file) => file.slice(root.length)
const sharedProcessModule = new URL('shared-test-process.mjs', import.meta.url)

/** The file a process runs: the test file itself, or a module running several (shared-test-process.mjs). */
function processFile(files, index) {
  if (files.length === 1) return files[0]
  const entry = join(entries, `process-${index}.test.mjs`)
  const named = files.map((file) => [relative(file), pathToFileURL(file).href])
  writeFileSync(
    entry,
    `import { runFiles } from ${JSON.stringify(sharedProcessModule.href)}
await runFiles(${JSON.stringify(named)})
`,
  )
  return entry
}

/**
 * Runs the processes' files, the spec report to stdout. Resolves to the tests run and failed (a process
 * that died counts as one failed test), and the processes that ended by themselves: their files, how, and
 * the end of their stderr. A test's events name the module that declared it, which may not be the test
 * file, so they are counted as a whole.
 */
const durations = new Map()

function runProcesses(processes) {
  const sharedProcessPath = fileURLToPath(sharedProcessModule)
  const filesOf = new Map(processes.map((files, index) => [processFile(files, index), files]))
  const tally = { ran: 0, failed: 0 }
  const stderrTails = new Map()
  const ended = []
  const stream = run({ files: [...filesOf.keys()], concurrency })
  stream.on('test:stderr', ({ file, message }) => {
    const lines = [...(stderrTails.get(file) ?? []), ...message.replace(/\n$/, '').split('\n')]
    stderrTails.set(file, lines.slice(-STDERR_LINES_KEPT))
  })
  stream.on('test:pass', ({ details, file, name, nesting }) => {
    if (details?.type !== 'suite') tally.ran++
    if (nesting !== 0) return
    // In a process of several files, the top-level tests are the files' suites, named by their paths.
    const testFile = file === sharedProcessPath ? join(root, name) : file
    durations.set(testFile, (durations.get(testFile) ?? 0) + (details?.duration_ms ?? 0))
  })
  stream.on('test:fail', ({ details, file }) => {
    const { error } = details ?? {}
    // A suite fails by itself when a hook of its, or its body, threw: a shared file's own top-level hooks.
    if (details?.type !== 'suite' || error?.failureType !== 'subtestsFailed') {
      tally.ran++
      tally.failed++
    }
    if (error?.failureType === 'testCodeFailure' && (error.exitCode != null || error.signal != null)) {
      const how = error.signal ? `signal ${error.signal}` : `exit code ${error.exitCode}`
      ended.push({ file, files: filesOf.get(file) ?? [file], signal: error.signal, how })
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

/** Names each process that ended by itself (by its file, or its files), how, and the end of its stderr. */
function reportEnded(ended, again = '') {
  for (const { files, how, tail } of ended) {
    const whose =
      files.length === 1 ? `${files[0]}'s process` : `the process of ${files.map(relative).join(', ')}`
    console.error(`run-tests: ${whose} ended with ${how}${again}; the end of its stderr:\n${tail}\n`)
  }
}

const first = await runProcesses(intoProcesses(files))
reportEnded(first.ended)
// A crashed process's own failure is replaced by its files' second runs, each by itself; the failures it
// reported before still count.
const crashedProcesses = first.ended.filter(({ signal }) => signal != null)
const crashed = crashedProcesses.flatMap(({ files }) => files)
let ran = first.ran - crashedProcesses.length
let failed = first.failed - crashedProcesses.length
if (crashed.length > 0) {
  console.error(
    `run-tests: running once more, by itself, each file killed by a signal: ${crashed.join(', ')}`,
  )
  for (const file of crashed) {
    const again = await runProcesses([[file]])
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
