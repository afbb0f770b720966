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
// than most files' tests. The processes take their files from one queue, each the next when it has finished
// the one before, so that they end together and the run does not end on one long process; the longest
// files get a process each, and start first. A process takes no more files once it has grown past 600 MB
// (--process-memory MB sets another bound), and another takes its place: a process pays for each child
// process its tests start (a CLI, a platform) with a fork, which copies its page tables, and a process
// sharing files grows with each. --files-per-process N has each process take N at most (1: a process per
// file). A file must leave the environment as it found it (shared-test-process.mjs checks). A
// process killed by a signal has each of its files run again by itself, and the files no process took.
//
// npm's scripts start it as `node --liftoff-only scripts/run-tests.mjs`, and node:test starts each file's
// process with this one's flags (docs/development.md says why).
//
// --skip SUBSTRING (repeatable) leaves out the files whose path holds it. --backend-suites runs only the
// files whose suites run on the backends the run chooses (they name testBackends or oneTestBackend): CI's
// second run, on the other backend, needs no others.
//
//   node scripts/run-tests.mjs [--only-faults | --no-faults] [--backend-suites] [--concurrency N]
//                              [--files-per-process N] [--process-memory MB] [--skip substring ...]
//                              [path-substring ...]
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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
    'process-memory': { type: 'string' },
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
const processMemoryMb = positiveInteger('process-memory', 600)
/** Processes of a queue started for each file run in parallel: enough for those that stop at the memory bound. */
const PROCESSES_PER_SLOT = 8

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
const entries = mkdtempSync(join(tmpdir(), 'earshot-test-processes-'))
process.on('exit', () => rmSync(entries, { recursive: true, force: true }))
const relative = (file) => file.slice(root.length)
const sharedProcessModule = new URL('shared-test-process.mjs', import.meta.url)
const sharedProcessPath = fileURLToPath(sharedProcessModule)

/**
 * The processes sharing the files of a queue (shared-test-process.mjs): PROCESSES_PER_SLOT per file run in
 * parallel, since each takes files only until it has grown past --process-memory; or with
 * --files-per-process N as many as take N each. Gives their entry files, and a function that reads, once
 * they have ended, the files each took.
 */
function queueProcesses(files) {
  const directory = mkdtempSync(join(entries, 'queue-'))
  const claims = join(directory, 'claims')
  mkdirSync(claims)
  const named = files.map((file) => [relative(file), pathToFileURL(file).href])
  writeFileSync(join(directory, 'files.json'), JSON.stringify(named))
  const count = filesPerProcess
    ? Math.ceil(files.length / filesPerProcess)
    : Math.min(files.length, concurrency * PROCESSES_PER_SLOT)
  const runQueue = `import { runQueue } from ${JSON.stringify(sharedProcessModule.href)}`
  const processes = Array.from({ length: count }, (_, index) => {
    const entry = join(directory, `process-${index}.test.mjs`)
    const args = [directory, entry, { limit: filesPerProcess || undefined, memoryMb: processMemoryMb }]
    writeFileSync(entry, `${runQueue}\nawait runQueue(...${JSON.stringify(args)})\n`)
    return entry
  })
  const taken = () => {
    const by = new Map(processes.map((entry) => [entry, []]))
    for (const index of readdirSync(claims))
      by.get(readFileSync(join(claims, index), 'utf8'))?.push(files[index])
    return by
  }
  return { processes, taken }
}

/**
 * Runs each of `own` in a process of its own, first, then `shared` in processes sharing them, the spec
 * report to stdout. Resolves to the tests run and failed (a process that died counts as one failed test),
 * the processes that ended by themselves (their files, how, and the end of their stderr), and the shared
 * files no process took (those left when the processes sharing them had ended). A test's events name the
 * module that declared it, which may not be the test file, so they are counted as a whole.
 */
const durations = new Map()

function runProcesses(own, shared = []) {
  const queue = queueProcesses(shared)
  const tally = { ran: 0, failed: 0 }
  const stderrTails = new Map()
  const ended = []
  const stream = run({ files: [...own, ...queue.processes], concurrency })
  stream.on('test:stderr', ({ file, message }) => {
    const lines = [...(stderrTails.get(file) ?? []), ...message.replace(/\n$/, '').split('\n')]
    stderrTails.set(file, lines.slice(-STDERR_LINES_KEPT))
  })
  const queueEntries = new Set(queue.processes)
  stream.on('test:pass', ({ details, file, name, nesting }) => {
    // A process of the queue's that took no file reports itself as a test, which is none of the files'.
    if (nesting === 0 && queueEntries.has(file)) return
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
      ended.push({ file, signal: error.signal, how })
    }
  })
  const report = stream.compose(spec)
  report.pipe(process.stdout, { end: false })
  return new Promise((resolve) => {
    report.once('end', () => {
      const taken = queue.taken()
      for (const end of ended) {
        end.files = taken.get(end.file) ?? [end.file]
        end.tail = (stderrTails.get(end.file) ?? []).join('\n').trim() || '(nothing)'
      }
      const takenFiles = new Set([...taken.values()].flat())
      resolve({ ...tally, ended, untaken: shared.filter((file) => !takenFiles.has(file)) })
    })
  })
}

/** Names each process that ended by itself (by its file, or its files), how, and the end of its stderr. */
function reportEnded(ended, again = '') {
  for (const { files, how, tail } of ended) {
    const whose =
      files.length === 1
        ? `${files[0]}'s process`
        : `the process of ${files.map(relative).join(', ') || 'no file yet (it ended before taking one)'}`
    console.error(`run-tests: ${whose} ended with ${how}${again}; the end of its stderr:\n${tail}\n`)
  }
}

// The long files a process each, first; the others from a queue that processes share.
const first = await runProcesses(
  files.filter(isLong),
  files.filter((file) => !isLong(file)),
)
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
    const again = await runProcesses([file])
    ran += again.ran
    failed += again.failed
    reportEnded(again.ended, ' again')
  }
}
// The files left in the queue when the processes sharing it had all ended (one ended by itself): run now.
if (first.untaken.length > 0) {
  console.error(
    `run-tests: running, each in a process of its own, the files no process took: ${first.untaken.join(', ')}`,
  )
  const left = await runProcesses(first.untaken)
  ran += left.ran
  failed += left.failed
  reportEnded(left.ended)
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
