import type { ChildProcess } from 'node:child_process'
import { spawnCli } from './run-cli.js'

/** A CLI started as a child process and left running (a follower, a listener), with what it printed. */
export interface CliProcess {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves with the exit code, or the signal that ended it. */
  exited: Promise<number | string | null>
  /**
   * Resolves once `check` holds of the output so far (checked on every chunk); rejects when the process
   * exits first or after `timeoutMs`.
   */
  waitForOutput(
    what: string,
    check: (output: { stdout: string; stderr: string }) => boolean,
    timeoutMs?: number,
  ): Promise<void>
  /** SIGKILL, resolved once it is gone. */
  kill(): Promise<void>
}

/** Starts a built CLI (spawnCli: a clean environment plus `env`) and collects its output. */
export function startCliProcess(binPath: string, args: string[], env: Record<string, string>): CliProcess {
  const child = spawnCli(binPath, args, env)
  let stdout = ''
  let stderr = ''
  const watchers = new Set<() => void>()
  const changed = () => {
    for (const watcher of watchers) watcher()
  }
  child.stdout.on('data', (chunk) => {
    stdout += chunk
    changed()
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
    changed()
  })
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  )
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForOutput(what, check, timeoutMs = 60_000) {
      return new Promise<void>((resolve, reject) => {
        const done = (error?: Error) => {
          clearTimeout(timer)
          watchers.delete(watcher)
          if (error) reject(error)
          else resolve()
        }
        const watcher = () => {
          if (check({ stdout, stderr })) done()
        }
        const timer = setTimeout(
          () => done(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; stderr: ${stderr}`)),
          timeoutMs,
        )
        watchers.add(watcher)
        void exited.then((code) => done(new Error(`exited (${code}) before ${what}; stderr: ${stderr}`)))
        watcher()
      })
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
  }
}
