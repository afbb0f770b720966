import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * The Go partner kit's own suite, `go test ./...` in kits/go, run from `npm test`: the envelope vectors,
 * the client against a platform it starts, and with DATABASE_URL (passed through) the PostgreSQL tests of
 * kits/go/pgtest. Without a Go toolchain it is skipped with a notice saying what to install.
 */

const kit = fileURLToPath(new URL('../../../../kits/go/', import.meta.url))

const missingGo =
  spawnSync('go', ['version'], { stdio: 'ignore' }).error !== undefined &&
  'no Go toolchain (go) on PATH: apt-get install golang-go to run the Go kit’s tests'

/** No module proxy is reachable: the kit needs none (its PostgreSQL tests use Debian's lib/pq). */
function goEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off' }
  if (!env.GOCACHE && !env.HOME && !env.XDG_CACHE_HOME) env.GOCACHE = join(tmpdir(), 'earshot-go-cache')
  return env
}

describe('the Go partner kit', { timeout: 360_000 }, () => {
  test('go test ./... passes in kits/go', { skip: missingGo, timeout: 360_000 }, async () => {
    const child = spawn('go', ['test', '-count=1', '-timeout', '300s', './...'], {
      cwd: kit,
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
    assert.equal(code, 0, `go test ./... in kits/go exited with ${code}:\n${tail}`)
  })
})
