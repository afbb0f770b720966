import assert from 'node:assert/strict'
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runCli } from './run-cli.js'

/**
 * scripts/run-tests.mjs, the runner of `npm test`, run on a repository of its own in a temporary
 * directory: a file whose process dies is named with how it ended and the end of its stderr; one killed
 * by a signal is run once more, its second run standing in for the crash; one that exits by itself is
 * not run again.
 */

const script = fileURLToPath(new URL('../../../scripts/run-tests.mjs', import.meta.url))

/** A test file that writes its process's id to `<name>.pid` beside it. */
function notesItsProcess(name: string): string {
  return `import { writeFileSync } from 'node:fs'
import { test } from 'node:test'
test('notes its process', () => writeFileSync(new URL('./${name}.pid', import.meta.url), String(process.pid)))
`
}

const FILES: Record<string, string> = {
  'passes.test.js': `import { test } from 'node:test'
test('one', () => {})
test('two', () => {})
`,
  // Killed by SIGKILL the first time it runs in this repository (a marker file says so), then passes.
  'killed-once.test.js': `import { test } from 'node:test'
import { existsSync, writeFileSync } from 'node:fs'
test('killed the first time', () => {
  const marker = new URL('../../../killed-once', import.meta.url)
  if (existsSync(marker)) return
  writeFileSync(marker, '')
  console.error('the last words of the first run')
  process.kill(process.pid, 'SIGKILL')
})
`,
  'killed-always.test.js': `import { test } from 'node:test'
test('killed each time', () => {
  console.error('the last words of every run')
  process.kill(process.pid, 'SIGKILL')
})
`,
  // Chooses a backend, as the suites that run on testBackends or oneTestBackend do; and says its flag.
  'chooses-backend.test.js': `import { test } from 'node:test'
const oneTestBackend = 'pglite'
test('on ' + oneTestBackend, () => console.log('liftoff only: ' + process.execArgv.includes('--liftoff-only')))
`,
  // With hooks-seen.test.js in one process: its tests see this file's hooks ran once each, and no more.
  'hooks-own.test.js': `import assert from 'node:assert/strict'
import { after, beforeEach, test } from 'node:test'
beforeEach(() => { globalThis.hooked = (globalThis.hooked ?? 0) + 1 })
after(() => { globalThis.ownAfterRan = true })
test('hooked once', () => assert.equal(globalThis.hooked, 1))
`,
  'hooks-seen.test.js': `import assert from 'node:assert/strict'
import { test } from 'node:test'
test("another file's hooks ran before, and not for this test", () => {
  assert.equal(globalThis.ownAfterRan, true)
  assert.equal(globalThis.hooked, 1)
})
`,
  // Leaves two variables changed: one that was unset, assigned undefined as a restore by assignment does
  // (Node stores the text "undefined"), and one that was set.
  'environment-left.test.js': `import { test } from 'node:test'
test('sets variables', () => {
  process.env.EARSHOT_FIXTURE_SET = process.env.EARSHOT_FIXTURE_UNSET
  process.env.HOME = '/elsewhere'
})
`,
  'environment-seen.test.js': `import assert from 'node:assert/strict'
import { test } from 'node:test'
test('sees the environment as it was', () => {
  assert.equal(process.env.EARSHOT_FIXTURE_SET, undefined)
  assert.notEqual(process.env.HOME, '/elsewhere')
})
`,
  'after-throws.test.js': `import { after, test } from 'node:test'
after(() => { throw new Error('the after hook of after-throws') })
test('passes', () => {})
`,
  // Waits for the marks of the two files after it in the queue: it passes only if another process takes them.
  'a-waits.test.js': `import { existsSync } from 'node:fs'
import { test } from 'node:test'
test('the files after it ran meanwhile', async () => {
  const marks = ['b', 'c'].map((file) => new URL('./' + file + '.mark', import.meta.url))
  for (const deadline = Date.now() + 20_000; !marks.every((mark) => existsSync(mark)); ) {
    if (Date.now() > deadline) throw new Error('b-marks and c-marks did not run while this file waited')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
})
`,
  'b-marks.test.js': `import { writeFileSync } from 'node:fs'
import { test } from 'node:test'
test('marks b', () => writeFileSync(new URL('./b.mark', import.meta.url), ''))
`,
  'c-marks.test.js': `import { writeFileSync } from 'node:fs'
import { test } from 'node:test'
test('marks c', () => writeFileSync(new URL('./c.mark', import.meta.url), ''))
`,
  'pid-a.test.js': notesItsProcess('a'),
  'pid-b.test.js': notesItsProcess('b'),
  'exits.test.js': `import { test } from 'node:test'
test('passes, then sets the exit code', () => {
  console.error('exiting with 3')
  process.exitCode = 3
})
`,
}

describe('run-tests', { timeout: 120_000 }, () => {
  let repository: string

  before(async () => {
    repository = await mkdtemp(join(tmpdir(), 'earshot-run-tests-'))
  })
  after(async () => {
    await rm(repository, { recursive: true, force: true })
  })

  /** run-tests in a repository of its own holding the test files named. */
  async function runTests(
    name: string,
    files: string[],
    args: string[] = [],
  ): Promise<{ code: number | null; output: string }> {
    const root = join(repository, name)
    const dist = join(root, 'packages', 'fixture', 'dist')
    await mkdir(dist, { recursive: true })
    await mkdir(join(root, 'scripts'))
    await copyFile(script, join(root, 'scripts', 'run-tests.mjs'))
    for (const module of ['count-tests.mjs', 'shared-test-process.mjs'])
      await copyFile(join(script, '..', module), join(root, 'scripts', module))
    await writeFile(join(root, 'package.json'), '{"type":"module"}')
    for (const file of files) await writeFile(join(dist, file), FILES[file] as string)
    const { code, stdout, stderr } = await runCli(join(root, 'scripts', 'run-tests.mjs'), args, {})
    return { code, output: `${stdout}${stderr}` }
  }

  /** run-tests with the files named sharing one process. */
  const runShared = (name: string, files: string[]) =>
    runTests(name, files, ['--files-per-process', String(files.length)])

  test('a file killed once is named, run again alone, and passes on its second run', async () => {
    const { code, output } = await runTests('killed-once', ['passes.test.js', 'killed-once.test.js'])
    assert.equal(code, 0, output)
    assert.match(
      output,
      /killed-once\.test\.js's process ended with signal SIGKILL; the end of its stderr:\n/,
    )
    assert.match(output, /the last words of the first run/)
    assert.match(
      output,
      /running once more, by itself, each file killed by a signal: \S*killed-once\.test\.js/,
    )
    assert.match(output, /run-tests: 3 tests ran, 0 failed, in 2 files \(1 of them run twice after a crash\)/)
  })

  test('files sharing a process run one after another, each with its own hooks', async () => {
    const files = ['hooks-own.test.js', 'hooks-seen.test.js']
    const { code, output } = await runShared('shared-process', files)
    assert.equal(code, 0, output)
    assert.match(output, /run-tests: 2 tests ran, 0 failed, in 2 files\n/)
    assert.match(output, /the slowest files: packages\/fixture\/dist\/hooks-(own|seen)\.test\.js \d+ s, /)
  })

  test("a shared file's own top-level hook that throws fails the run", async () => {
    const files = ['after-throws.test.js', 'passes.test.js']
    const { code, output } = await runShared('shared-hook-throws', files)
    assert.equal(code, 1, output)
    assert.match(output, /the after hook of after-throws/)
    assert.match(output, /run-tests: 4 tests ran, 1 failed, in 2 files\n/)
  })

  test('a file sharing a process that leaves the environment changed fails; the next file runs under it as it was', async () => {
    const files = ['environment-left.test.js', 'environment-seen.test.js']
    const { code, output } = await runShared('environment', files)
    assert.equal(code, 1, output)
    assert.match(
      output,
      /environment-left\.test\.js left the environment changed \(EARSHOT_FIXTURE_SET, HOME\): the files after it/,
    )
    assert.match(output, /✔ sees the environment as it was/)
    assert.match(output, /run-tests: \d+ tests ran, 1 failed, in 2 files\n/)
  })

  test('the processes sharing files take the next one each when ready: a file waiting for the two after it passes', async () => {
    const files = ['a-waits.test.js', 'b-marks.test.js', 'c-marks.test.js']
    const { code, output } = await runTests('queue', files, ['--concurrency', '2'])
    assert.equal(code, 0, output)
    assert.match(output, /✔ the files after it ran meanwhile/)
    assert.equal(output.match(/✔ marks b/g)?.length, 1, output)
    assert.equal(output.match(/✔ marks c/g)?.length, 1, output)
    assert.match(output, /run-tests: 3 tests ran, 0 failed, in 3 files\n/)
  })

  test('a process of several files killed by a signal has each file run again by itself, and those it left', async () => {
    const files = ['hooks-own.test.js', 'killed-once.test.js', 'passes.test.js']
    const { code, output } = await runShared('shared-killed', files)
    assert.equal(code, 0, output)
    assert.match(
      output,
      /the process of \S*hooks-own\.test\.js, \S*killed-once\.test\.js ended with signal SIGKILL; the end of its stderr:\n/,
    )
    assert.match(
      output,
      /running once more, by itself, each file killed by a signal: \S*hooks-own\.test\.js, \S*killed-once\.test\.js\n/,
    )
    assert.match(
      output,
      /running, each in a process of its own, the files no process took: \S*passes\.test\.js\n/,
    )
    assert.match(output, /✔ one/)
    // hooks-own's first run counts only if its process reported it before the kill (Node 24 may not).
    assert.match(
      output,
      /run-tests: [45] tests ran, 0 failed, in 3 files \(2 of them run twice after a crash\)/,
    )
  })

  test('a process grown past --process-memory takes no more files, and another takes the next', async () => {
    const files = ['pid-a.test.js', 'pid-b.test.js']
    const args = ['--concurrency', '1', '--process-memory', '1']
    const { code, output } = await runTests('memory', files, args)
    assert.equal(code, 0, output)
    assert.match(output, /run-tests: 2 tests ran, 0 failed, in 2 files\n/)
    assert.doesNotMatch(output, /the files no process took/)
    const dist = join(repository, 'memory', 'packages', 'fixture', 'dist')
    const [a, b] = await Promise.all(['a', 'b'].map((name) => readFile(join(dist, `${name}.pid`), 'utf8')))
    assert.notEqual(a, b)
  })

  test('a file killed on both runs fails the run', async () => {
    const { code, output } = await runTests('killed-always', ['passes.test.js', 'killed-always.test.js'])
    assert.equal(code, 1, output)
    assert.match(output, /killed-always\.test\.js's process ended with signal SIGKILL again/)
    assert.match(output, /run-tests: \d+ tests ran, 1 failed, in 2 files/)
  })

  test('a file that exits with a code of its own is named and fails the run, without a second run', async () => {
    // A process each, so that the one ending is the file's own (sharing, it may take both files).
    const { code, output } = await runTests(
      'exits',
      ['passes.test.js', 'exits.test.js'],
      ['--files-per-process', '1'],
    )
    assert.equal(code, 1, output)
    assert.match(
      output,
      /exits\.test\.js's process ended with exit code 3; the end of its stderr:\nexiting with 3/,
    )
    assert.doesNotMatch(output, /running once more/)
    assert.match(output, /run-tests: \d+ tests ran, 1 failed, in 2 files\n/)
  })

  test('--skip leaves out the files whose path holds the text given', async () => {
    const { code, output } = await runTests('skip', ['passes.test.js', 'exits.test.js'], ['--skip', 'exits'])
    assert.equal(code, 0, output)
    assert.match(output, /run-tests: 1 test files on Node/)
    assert.match(output, /run-tests: 2 tests ran, 0 failed, in 1 files\n/)
  })

  test("--backend-suites runs only the files that choose a backend, each with the runner's flags", async () => {
    const files = ['passes.test.js', 'chooses-backend.test.js']
    const { code, output } = await runTests('backend-suites', files, ['--backend-suites'])
    assert.equal(code, 0, output)
    assert.match(output, /run-tests: 1 tests ran, 0 failed, in 1 files\n/)
    assert.match(output, /liftoff only: true/)
  })
})
