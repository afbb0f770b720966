import { randomBytes } from 'node:crypto'
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { isMainThread, threadId } from 'node:worker_threads'

export class LockHeldError extends Error {
  readonly code = 'lock_held'
}

/*
 * The lock at `path` is a directory holding exactly one entry, `pid-<pid>-<thread>-<nonce>`, naming its
 * holder (the nonce is random, so an entry name is never used twice, even when a pid is reused).
 *
 * - Acquire: build the directory with our entry under a unique name beside `path`, then rename() it onto
 *   `path`. rename() is atomic and never replaces a non-empty directory (ENOTEMPTY/EEXIST), so it
 *   succeeds only when `path` is absent or an empty directory, and the lock never appears without its
 *   holder's entry.
 * - Held: only the holder ever removes its own entry (a takeover removes only the exact entry it read and
 *   found dead; a live holder's entry has another name). So while we hold, `path` stays a non-empty
 *   directory: no rename() can replace it and no rmdir() can remove it. Hence at most one holder.
 * - Stale (its holder is dead, e.g. killed with -9): unlink that exact entry (ENOENT when a rival already
 *   did, or when `path` is already someone else's directory: harmless), which leaves `path` an empty
 *   directory; then everyone retries the rename and exactly one wins, the others see its live entry and
 *   are refused. A delayed rival still unlinking the dead entry later finds nothing to unlink.
 * - An empty directory (a crash or a rival between the two steps of a release or takeover) is removed
 *   with rmdir(), which fails if it has meanwhile become someone's lock, or simply renamed over.
 * - A plain file at `path` is a lock written by an earlier version (its content is the pid): if that pid
 *   is dead it is unlinked, and unlink() cannot remove a directory, so never a current lock.
 * An entry with our own pid that this thread does not hold was left by a dead predecessor that had the
 * same pid (a container restarted: pid 1 again), unless another thread of ours may hold it.
 * A crash at any step leaves only an empty or stale directory or an unused build directory (removed on
 * the next acquisition), never a state that blocks the next start.
 *
 * Removing a stale lock by rename/unlink of `path` and then creating a new one is racy whatever is
 * checked first: a rival that judged the same lock stale can remove the lock just created in its place.
 */

/** Entries of the locks this thread holds. */
const heldHere = new Set<string>()

/**
 * Takes an exclusive lock at `path` (a directory naming this process). A lock left by a process that no
 * longer runs (killed with -9) is taken over; one held by a live process is refused with the error
 * `refuse` makes of its pid. Returns the release function.
 */
export function acquireLockFile(path: string, refuse: (holderPid: number) => Error): () => void {
  const entry = `pid-${process.pid}-${threadId}-${randomBytes(8).toString('hex')}`
  const building = `${path}.${entry}`
  mkdirSync(building, { mode: 0o700 })
  let acquired = false
  try {
    writeFileSync(join(building, entry), `${process.pid}\n`, { mode: 0o600 })
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        renameSync(building, path)
        acquired = true
        break
      } catch (error) {
        if (!hasCode(error, 'EEXIST', 'ENOTEMPTY', 'ENOTDIR')) throw error
      }
      clearStale(path, refuse)
    }
  } finally {
    if (!acquired) rmSync(building, { recursive: true, force: true })
  }
  if (!acquired) throw new LockHeldError(`${path} could not be locked`)
  heldHere.add(entry)
  removeLeftovers(path)
  let released = false
  return () => {
    if (released) return
    released = true
    heldHere.delete(entry)
    try {
      unlinkSync(join(path, entry))
      rmdirSync(path) // fails harmlessly if a new holder has already renamed its lock over the empty one
    } catch {}
  }
}

/** Throws `refuse(pid)` if a live process holds `path`; otherwise removes what a dead one left there. */
function clearStale(path: string, refuse: (holderPid: number) => Error): void {
  let entries: string[]
  try {
    entries = readdirSync(path)
  } catch (error) {
    if (hasCode(error, 'ENOENT')) return // released meanwhile
    if (!hasCode(error, 'ENOTDIR')) throw error
    clearLegacyFile(path, refuse)
    return
  }
  if (entries.length === 0) {
    ignore(() => rmdirSync(path), 'ENOENT', 'ENOTEMPTY', 'EEXIST')
    return
  }
  for (const name of entries) {
    const holder = /^pid-(\d+)-(\d+)-[0-9a-f]+$/.exec(name)
    if (!holder) {
      throw new LockHeldError(`${path} holds ${name}, which is not a lock holder; remove ${path} if unused`)
    }
    const pid = Number(holder[1])
    const alive =
      pid === process.pid ? heldHere.has(name) || !(isMainThread && holder[2] === '0') : isRunning(pid)
    if (alive) throw refuse(pid)
    ignore(() => unlinkSync(join(path, name)), 'ENOENT')
  }
}

function clearLegacyFile(path: string, refuse: (holderPid: number) => Error): void {
  let content: string
  try {
    content = readFileSync(path, 'utf8')
  } catch (error) {
    if (hasCode(error, 'ENOENT', 'EISDIR')) return
    throw error
  }
  const pid = Number.parseInt(content, 10)
  const alive = pid === process.pid ? !isMainThread : Number.isInteger(pid) && pid > 0 && isRunning(pid)
  if (alive) throw refuse(pid)
  // EISDIR (Linux) / EPERM (macOS): it has become a current lock directory, which must stay.
  ignore(() => unlinkSync(path), 'ENOENT', 'EISDIR', 'EPERM')
}

/** Removes build directories beside `path` left by processes killed before their rename. */
function removeLeftovers(path: string): void {
  const prefix = `${basename(path)}.pid-`
  try {
    for (const name of readdirSync(dirname(path))) {
      if (!name.startsWith(prefix)) continue
      const pid = /^(\d+)-\d+-[0-9a-f]+$/.exec(name.slice(prefix.length))?.[1]
      if (pid !== undefined && !isRunning(Number(pid))) {
        rmSync(join(dirname(path), name), { recursive: true, force: true })
      }
    }
  } catch {}
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return hasCode(error, 'EPERM')
  }
}

function hasCode(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as NodeJS.ErrnoException).code ?? '')
}

function ignore(operation: () => void, ...codes: string[]): void {
  try {
    operation()
  } catch (error) {
    if (!hasCode(error, ...codes)) throw error
  }
}
