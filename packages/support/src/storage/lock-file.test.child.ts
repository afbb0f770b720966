/**
 * A process contending for a lock in lock-file.test.ts, driven over its IPC channel.
 * argv: lockPath, mode ('once' | 'turns'), and for 'turns': logPath, ending ('release' | 'kill').
 * - once: on each 'go', tries once and reports acquired or refused; holds until 'release' or 'exit'.
 * - turns: on 'go', retries until it holds the lock, writes `enter <pid>` and `exit <pid>` lines to logPath
 *   while holding, then releases it and exits, or is killed with -9 still holding it.
 */
import { appendFileSync } from 'node:fs'
import { acquireLockFile, LockHeldError } from './lock-file.js'

export type ParentMessage = 'go' | 'release' | 'exit'
export type ChildMessage =
  | { type: 'ready' }
  | { type: 'acquired' }
  | { type: 'refused'; holderPid: number }
  | { type: 'released' }

class Refused extends Error {
  constructor(readonly holderPid: number) {
    super(`held by pid ${holderPid}`)
  }
}

const [lockPath = '', mode = 'once', logPath = '', ending = 'release'] = process.argv.slice(2)
const send = (message: ChildMessage) => process.send?.(message)
let release: (() => void) | undefined

function tryOnce(): void {
  try {
    release = acquireLockFile(lockPath, (holderPid) => new Refused(holderPid))
    send({ type: 'acquired' })
  } catch (error) {
    if (!(error instanceof Refused)) throw error
    send({ type: 'refused', holderPid: error.holderPid })
  }
}

async function takeTurn(): Promise<void> {
  let releaseTurn: () => void
  for (;;) {
    try {
      releaseTurn = acquireLockFile(lockPath, (holderPid) => new Refused(holderPid))
      break
    } catch (error) {
      if (!(error instanceof Refused || error instanceof LockHeldError)) throw error
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  }
  appendFileSync(logPath, `enter ${process.pid}\n`)
  await new Promise((resolve) => setTimeout(resolve, 5)) // widens the window for a rival to get in
  appendFileSync(logPath, `exit ${process.pid}\n`)
  if (ending === 'kill') process.kill(process.pid, 'SIGKILL')
  releaseTurn()
  process.exit(0)
}

process.on('message', (message: ParentMessage) => {
  if (message === 'go') {
    if (mode === 'turns') {
      takeTurn().catch((error: unknown) => {
        console.error(error)
        process.exit(1)
      })
    } else tryOnce()
  } else if (message === 'release') {
    release?.()
    send({ type: 'released' })
  } else if (message === 'exit') process.exit(0)
})
send({ type: 'ready' })
