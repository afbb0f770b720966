/**
 * The benchmark's servers run in child processes, so that server and load generator do not share an
 * event loop; the parent talks to them over the IPC channel of `fork`.
 */
import { type ChildProcess, fork } from 'node:child_process'

/** What a child reports on request: its CPU time so far (µs) and resident memory (bytes). */
export interface ChildUsage {
  type: 'usage'
  cpuMicros: number
  rssBytes: number
}

export interface RunningChild<Ready> {
  ready: Ready
  /** The child's process id (e.g. to read its /proc entries from outside). */
  pid: number
  usage(): Promise<ChildUsage>
  /** Sends `{type}` and resolves with the child's first message of type `answer`. */
  ask<Answer>(type: string, answer: string): Promise<Answer>
  /** Asks the child to close its server and exit; kills it when it does not within the timeout. */
  stop(): Promise<void>
}

/** Child side: answers usage requests, and runs `close` then exits on "stop" or when the parent goes. */
export function serveParent(ready: object, close: () => Promise<void>): void {
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    try {
      await close()
    } finally {
      process.exit(0)
    }
  }
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'usage') {
      const cpu = process.cpuUsage()
      process.send?.({
        type: 'usage',
        cpuMicros: cpu.user + cpu.system,
        rssBytes: process.memoryUsage.rss(),
      } satisfies ChildUsage)
    } else if (message.type === 'stop') {
      void stop()
    }
  })
  process.on('disconnect', () => void stop())
  process.send?.({ type: 'ready', ...ready })
}

/** Parent side: forks the compiled module next to this one and waits for its "ready" message. */
export async function startChild<Ready>(
  module: string,
  env: Record<string, string>,
  { timeoutMs = 24 * 3600_000, execArgv = [] }: { timeoutMs?: number; execArgv?: string[] } = {},
): Promise<RunningChild<Ready>> {
  const child: ChildProcess = fork(new URL(module, import.meta.url), [], {
    env: { ...process.env, ...env },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${module} did not become ready`)), timeoutMs)
    const onMessage = (message: { type?: string }) => {
      if (message.type !== 'ready') return
      clearTimeout(timer)
      child.off('message', onMessage)
      resolve(message as Ready)
    }
    child.on('message', onMessage)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${module} exited with code ${code} before it was ready`))
    })
  }).catch((error: unknown) => {
    child.kill('SIGKILL')
    throw error
  })

  const ask = <Answer>(type: string, answer: string) =>
    new Promise<Answer>((resolve, reject) => {
      const done = (error?: Error, reply?: Answer) => {
        clearTimeout(timer)
        child.off('message', onMessage)
        if (error) reject(error)
        else resolve(reply as Answer)
      }
      const onMessage = (message: { type?: string }) => {
        if (message.type === answer) done(undefined, message as Answer)
      }
      const timer = setTimeout(() => done(new Error(`${module} did not answer ${type}`)), 30_000)
      child.on('message', onMessage)
      child.send({ type }, (error) => {
        if (error) done(new Error(`${module} is gone: ${error.message}`))
      })
    })
  return {
    ready,
    pid: child.pid as number,
    ask,
    usage: () => ask<ChildUsage>('usage', 'usage'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.send({ type: 'stop' })
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    },
  }
}
