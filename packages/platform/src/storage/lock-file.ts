import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'

export class LockHeldError extends Error {
  readonly code = 'lock_held'
}

/**
 * Takes an exclusive lock by creating `path` holding this process id. A lock left by a process that no
 * longer runs (killed with -9) is taken over; one held by a live process is refused with a message
 * naming what is locked and by whom. Returns the release function.
 */
export function acquireLockFile(path: string, what: string): () => void {
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
      if (Number.isInteger(holder) && isRunning(holder)) {
        throw new LockHeldError(
          `${what} is in use by another Earshot process (pid ${holder}); stop it first, or point EARSHOT_DATA_DIR elsewhere`,
        )
      }
      unlinkSync(path) // stale: its process is gone
    }
  }
  throw new LockHeldError(`${what} could not be locked (${path})`)
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
