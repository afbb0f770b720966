import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * The Go partner kit's suites, `go test ./...` in each of its three modules, run from `npm test`: kits/go
 * (the kit itself: the envelope vectors, unit tests, local servers; the standard library only),
 * kits/go/platformtests (the client, the downloads and the README's examples against a platform it
 * starts) and, with DATABASE_URL (passed through), kits/go/pgtest (the PostgreSQL tests). Without a Go
 * toolchain they are skipped with a notice saying what to install.
 */

const kits = fileURLToPath(new URL('../../../../kits/go/', import.meta.url))

/** Where Debian's golang-github-lib-pq-dev puts the driver kits/go/pgtest/go.mod points at. */
const LIB_PQ = '/usr/share/gocode/src/github.com/lib/pq'

const missingGo =
  spawnSync('go', ['version'], { stdio: 'ignore' }).error !== undefined &&
  'no Go toolchain (go) on PATH: apt-get install golang-go to run the Go kit’s tests'

const missingPostgreSQL =
  missingGo ||
  (!process.env.DATABASE_URL &&
    'DATABASE_URL is unset: the Go kit’s PostgreSQL tests (outbox, pushes from the platform, the kill test) are ' +
      'skipped; set it to a server where databases may be created, e.g. postgres://postgres@127.0.0.1:5432/postgres') ||
  (!existsSync(LIB_PQ) &&
    `no PostgreSQL driver at ${LIB_PQ}: the Go kit’s PostgreSQL tests are skipped (apt-get install golang-github-lib-pq-dev)`)

/** No module proxy is reachable: the modules need none (pgtest uses Debian's lib/pq, the rest replaces). */
function goEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off' }
  if (!env.GOCACHE && !env.HOME && !env.XDG_CACHE_HOME) env.GOCACHE = join(tmpdir(), 'earshot-go-cache')
  return env
}

/** `go test ./...` in the module at kits/go/<module>, its output streamed; resolves to its exit code and last lines. */
async function goTest(module: string): Promise<{ code: number | null; tail: string }> {
  const child = spawn('go', ['test', '-count=1', '-timeout', '300s', './...'], {
    cwd: join(kits, module),
    env: goEnvironment(),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let tail = ''
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000)
  }
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk)
    keep(chunk)
  })
  child.stderr.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk)
    keep(chunk)
  })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  return { code, tail }
}

describe('the Go partner kit', { timeout: 1_080_000 }, () => {
  for (const [module, skip] of [
    ['.', missingGo],
    ['platformtests', missingGo],
    ['pgtest', missingPostgreSQL],
  ] as const) {
    const where = module === '.' ? 'kits/go' : `kits/go/${module}`
    test(`go test ./... passes in ${where}`, { skip, timeout: 360_000 }, async () => {
      const { code, tail } = await goTest(module)
      assert.equal(code, 0, `go test ./... in ${where} exited with ${code}:\n${tail}`)
    })
  }
})
