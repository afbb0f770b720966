import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * The Python partner kit's own suite (kits/python/tests, unittest) as part of `npm test`: run from the
 * repository root with the first python3 that can import cryptography, its output streamed, and
 * skipped with a notice where there is none. The suite starts its platform with this very Node.js.
 */

const repositoryRoot = fileURLToPath(new URL('../../../../', import.meta.url))
const SUITE = ['-m', 'unittest', 'discover', '-s', 'kits/python/tests', '-t', 'kits/python']
const PROBE = 'import sys, cryptography; sys.exit(0 if sys.version_info >= (3, 9) else 1)'

const python = ['python3', '/usr/bin/python3'].find(
  (candidate) => spawnSync(candidate, ['-c', PROBE], { stdio: 'ignore', timeout: 30_000 }).status === 0,
)
const missing =
  !python &&
  'no Python 3.9+ with cryptography (apt-get install python3-cryptography): the Python kit is not tested'

test('the Python kit passes its unittest suite', { skip: missing, timeout: 240_000 }, async (t) => {
  const child = spawn(python as string, SUITE, {
    cwd: repositoryRoot,
    env: { ...process.env, EARSHOT_NODE: process.execPath, PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['ignore', 'inherit', 'inherit'],
    signal: t.signal,
  })
  const exit = await new Promise<number | string | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code, signal) => resolve(code ?? signal))
  })
  assert.equal(exit, 0, `python3 ${SUITE.join(' ')} exited with ${exit}`)
})
