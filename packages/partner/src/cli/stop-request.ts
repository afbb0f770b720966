import { readFileSync } from 'node:fs'

/** How often listen looks whether the processes that started it are still there. */
const PARENT_CHECK_MS = 500

/**
 * Resolves with why listen should stop: `SIGINT`, `SIGTERM`, or `parent process N exited`. Waits for SIGINT
 * or SIGTERM and, with `watchParent`, for the process that started it to exit. `npx` (npm exec) runs the
 * command through `sh -c`, and a SIGTERM to npx alone ends npx (and, once npx forwards it, the shell) but
 * not this process: it is left holding its port. Noticing either of them go (this process's parent
 * changing, or, where /proc tells, the shell's) stops it the same graceful way. The check's timer is
 * unref'ed, so it never keeps the process alive.
 */
export function stopRequest({ watchParent }: { watchParent: boolean }): Promise<string> {
  return new Promise<string>((resolve) => {
    let parentCheck: NodeJS.Timeout | undefined
    const stop = (why: string) => {
      clearInterval(parentCheck)
      process.removeListener('SIGINT', onSigint)
      process.removeListener('SIGTERM', onSigterm)
      resolve(why)
    }
    const onSigint = () => stop('SIGINT')
    const onSigterm = () => stop('SIGTERM')
    process.once('SIGINT', onSigint)
    process.once('SIGTERM', onSigterm)
    if (!watchParent) return
    const parent = process.ppid
    const grandparent = parentOf(parent)
    parentCheck = setInterval(() => {
      if (process.ppid !== parent) stop(`parent process ${parent} exited`)
      else if (grandparent !== undefined && parentOf(parent) !== grandparent)
        stop(`parent process ${grandparent} exited`)
    }, PARENT_CHECK_MS).unref()
  })
}

/** The parent of process `pid`, read from /proc; undefined where there is no /proc or no such process. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // pid (comm) state ppid …: the comm may hold spaces and parentheses, so fields count from its last ')'.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return undefined
  }
}

/** Started by npm (npx, npm exec, npm run, npm start), whose end does not reach this process. */
export function startedByNpm(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.npm_lifecycle_event !== undefined
}
