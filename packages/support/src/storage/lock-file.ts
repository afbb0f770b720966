import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'

export class LockHeldError extends Error {
  readonly code = 'lock_held'
}

/**
 * Takes an exclusive lock by creating `path` holding this process id. A lock left by a process that no
 * longer runs (killed with -9) is taken over; one held by a live process is refused with the error
 * `refuse` makes of its pid. Returns the release function.
 */
export function acquireLockFile(path: string, refuse: (holderPid: number) => Error): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      let released = false
      return () => {
        if (released) return
        released = true
        try {
          unlinkSync(path)
        } catch {}
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = Number.parseInt(readFileSync(path, 'utf8'), 10)
      if (Number.isInteger(holder) && isRunning(holder)) throw refuse(holder)
      unlinkSync(path) // stale: its process is gone
    }
  }
  throw new LockHeldError(`${path} could not be locked`)
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
