#!/usr/bin/env node
// Runs the compiled tests of every package with node:test on any Node ≥ 20.18. `node --test DIR`
// means "every test file under DIR" on Node 20 but "DIR as one module" on Node 22 and later, so the
// files are listed here. Exits non-zero when a test fails or when no test ran at all.
//
// Test files run in parallel, one more than the machine's cores (most of them wait on sockets, child
// processes and timers part of the time); --concurrency N sets another number.
//
//   node scripts/run-tests.mjs [--only-faults | --no-faults] [--concurrency N] [path-substring ...]
import { readdirSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { run } from 'node:test'
import { spec } from 'node:test/reporters'
import { parseArgs } from 'node:util'

const root = new URL('..', import.meta.url).pathname
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'only-faults': { type: 'boolean' },
    'no-faults': { type: 'boolean' },
    concurrency: { type: 'string', default: String(availableParallelism() + 1) },
  },
})

// Fault-injection suites (*.faults.test.js) restart services and kill processes: `npm run test:faults`.
const isFaults = (file) => file.endsWith('.faults.test.js')
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
  .sort()

if (files.length === 0) {
  console.error('run-tests: no test file matched (is the build missing? run `npm run build`)')
  process.exit(1)
}
console.log(
  `run-tests: ${files.length} test files on Node ${process.version}, ${values.concurrency} at a time`,
)

let ran = 0
let failed = 0
const concurrency = Number(values.concurrency)
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`run-tests: --concurrency must be a positive integer, not ${values.concurrency}`)
  process.exit(2)
}
const stream = run({ files, concurrency })
stream.on('test:pass', ({ details }) => {
  if (details?.type !== 'suite') ran++
})
stream.on('test:fail', ({ details }) => {
  if (details?.type !== 'suite') {
    ran++
    failed++
  }
})
const report = stream.compose(spec)
report.pipe(process.stdout)
report.once('end', () => {
  const summary = `run-tests: ${ran} tests ran, ${failed} failed, in ${files.length} files`
  if (ran === 0) {
    console.error(`${summary}: no test ran`)
    process.exitCode = 1
  } else if (failed > 0) {
    console.error(summary)
    process.exitCode = 1
  } else console.log(summary)
})
