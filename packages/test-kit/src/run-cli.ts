import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { createServer } from 'node:net'

/** What a finished CLI run printed, and how it exited. */
export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * The environment without anything Earshot-related leaking in from the caller's shell, nor the variable
 * node:test sets in a test file's process (with it, node:test's run() in the child would refuse to run),
 * plus `extra`.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('EARSHOT_') && name !== 'DATABASE_URL' && name !== 'NODE_TEST_CONTEXT')
      env[name] = value
  }
  return { ...env, ...extra }
}

/**
 * Node's flags for a process a test starts, those `npm test` gives its test files: a process that lives for
 * seconds spends less CPU without V8 optimising PGlite's WebAssembly (docs/development.md).
 */
export const TEST_NODE_FLAGS = ['--liftoff-only']

/** Starts a built CLI binary (or any Node script) as a child process in a clean environment, in `cwd`. */
export function spawnCli(
  binPath: string,
  args: string[],
  env: Record<string, string>,
  { cwd }: { cwd?: string } = {},
) {
  return spawn(process.execPath, [...TEST_NODE_FLAGS, binPath, ...args], {
    cwd,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/**
 * Runs a built CLI binary (or any Node script) to the end, and collects its output and exit code.
 * Asynchronous, so a platform under test can live in the calling process.
 */
export function runCli(
  binPath: string,
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(binPath, args, env, options)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/**
 * A loopback port nothing listens on, for a CLI pointed at a server that is not there, or for a server a
 * child process starts later. It lies below the ports the system hands out to listen(0) and to outgoing
 * connections (from 32768 on Linux, 49152 elsewhere), so that no other test's socket takes it meanwhile.
 */
export async function closedPort(): Promise<number> {
  for (;;) {
    const port = 10_000 + randomInt(32_768 - 10_000)
    if (await isPortFree(port)) return port
  }
}

/** True when a listener can take the loopback port now: nothing holds it. */
export function isPortFree(port: number): Promise<boolean> {
  const server = createServer()
  return new Promise((resolve) => {
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** What a `--json` run printed on stdout, its one line parsed; the run must have exited 0. */
export function jsonOf<T>(run: CliRun): T {
  assert.equal(run.code, 0, run.stderr)
  const lines = run.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  return JSON.parse(lines[0] as string) as T
}

/** The `{"error"}` a refused `--json` run printed on stdout; the run must have exited 1. */
export function jsonError(run: CliRun): { code: number | string; msg: string } {
  assert.equal(run.code, 1, run.stderr)
  return JSON.parse(run.stdout.trim()).error
}
