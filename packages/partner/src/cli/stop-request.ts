/** How often listen looks whether its parent process is still there. */
const PARENT_CHECK_MS = 500

/**
 * Resolves with why listen should stop: `SIGINT`, `SIGTERM`, or `parent process N exited`. Waits for SIGINT or SIGTERM and, with `watchParent`, for the parent process to exit. `npx` (npm exec)
 * runs the command through `sh -c`, and a SIGTERM to npx alone ends npx and the shell but not this
 * process: it is left, reparented, holding its port. Noticing the parent change (process.ppid) stops
 * it the same graceful way. The check's timer is unref'ed, so it never keeps the process alive.
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
    parentCheck = setInterval(() => {
      if (process.ppid !== parent) stop(`parent process ${parent} exited`)
    }, PARENT_CHECK_MS).unref()
  })
}

/** Started by npm (npx, npm exec, npm run, npm start), whose end does not reach this process. */
export function startedByNpm(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.npm_lifecycle_event !== undefined
}
