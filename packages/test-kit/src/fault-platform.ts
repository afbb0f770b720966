import { type ChildPlatform, startChildPlatform } from './child-platform.js'

/**
 * A platform child process (child-platform.ts) started again and again on the same storage, for
 * tests that kill or stop it. Keeps the stderr of every run, so a failure can show what the platform
 * logged.
 */
export interface RestartablePlatform {
  /** The running process (the latest start). */
  readonly current: ChildPlatform
  /** How many processes were started. */
  readonly starts: number
  start(): Promise<ChildPlatform>
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>
  /** SIGTERM, and wait until it exits; resolves to its exit code or signal. */
  terminate(): Promise<number | string | null>
  /** Everything the processes wrote on stderr, run after run. */
  logs(): string
  /** Warnings and errors the processes logged (pino JSON lines, level ≥ 40), counted by message. */
  problems(): Record<string, number>
  /** Kills whatever still runs (for `after`). */
  dispose(): Promise<void>
}

export async function restartablePlatform(env: Record<string, string>): Promise<RestartablePlatform> {
  let current: ChildPlatform | undefined
  let starts = 0
  let logs = ''
  const start = async () => {
    const child = await startChildPlatform(env)
    starts++
    logs += `--- platform process ${starts} (pid ${child.process.pid}) ---\n`
    child.process.stderr?.on('data', (chunk) => {
      logs += chunk
    })
    current = child
    return child
  }
  await start()
  const platform: RestartablePlatform = {
    get current() {
      if (!current) throw new Error('the platform is not running')
      return current
    },
    get starts() {
      return starts
    },
    start,
    async kill() {
      const child = platform.current
      child.process.kill('SIGKILL')
      await child.exited
    },
    async terminate() {
      const child = platform.current
      child.process.kill('SIGTERM')
      return child.exited
    },
    logs: () => logs,
    problems() {
      const counts: Record<string, number> = {}
      for (const line of logs.split('\n')) {
        if (!line.startsWith('{')) continue
        try {
          const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } }
          if ((entry.level ?? 0) < 40) continue
          const key = `${entry.msg ?? '?'}${entry.err?.message ? `: ${entry.err.message}` : ''}`
          counts[key] = (counts[key] ?? 0) + 1
        } catch {
          // a line cut by a kill
        }
      }
      return counts
    },
    async dispose() {
      if (current && current.process.exitCode === null && current.process.signalCode === null) {
        current.process.kill('SIGKILL')
        await current.exited
      }
    },
  }
  return platform
}
