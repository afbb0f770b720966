import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, afterEach, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { acquireLockFile, LockHeldError } from './lock-file.js'
import type { ChildMessage, ParentMessage } from './lock-file.test.child.js'

const childScript = fileURLToPath(new URL('./lock-file.test.child.js', import.meta.url))
/** Contenders not yet exited, killed after each test so that a failing one cannot leave them running. */
const running = new Set<ChildProcess>()

/** A lock-file.test.child process, with its messages queued and its exit awaited. */
class Contender {
  readonly process: ChildProcess
  readonly pid: number
  /** Resolves with the exit code, or the signal that ended it. */
  readonly exited: Promise<number | string>
  #queue: ChildMessage[] = []
  #waiting: ((message: ChildMessage | undefined) => void) | undefined
  #gone = false

  constructor(lockPath: string, ...args: string[]) {
    this.process = spawn(process.execPath, [childScript, lockPath, ...args], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    assert.ok(this.process.pid)
    this.pid = this.process.pid
    running.add(this.process)
    this.process.on('message', (message: ChildMessage) => {
      if (this.#waiting) this.#waiting(message)
      else this.#queue.push(message)
    })
    this.exited = new Promise((resolve) => {
      this.process.on('exit', (code, signal) => {
        this.#gone = true
        running.delete(this.process)
        this.#waiting?.(undefined)
        resolve(code ?? signal ?? 'unknown')
      })
    })
  }

  /** The next message; fails if the process exits before sending one. */
  async next(): Promise<ChildMessage> {
    const queued = this.#queue.shift()
    if (queued) return queued
    if (this.#gone) throw new Error(`contender ${this.pid} exited`)
    const message = await new Promise<ChildMessage | undefined>((resolve) => {
      this.#waiting = resolve
    })
    this.#waiting = undefined
    if (!message) throw new Error(`contender ${this.pid} exited`)
    return message
  }

  async expect<T extends ChildMessage['type']>(type: T): Promise<Extract<ChildMessage, { type: T }>> {
    const message = await this.next()
    assert.equal(message.type, type, `contender ${this.pid} sent ${JSON.stringify(message)}`)
    return message as Extract<ChildMessage, { type: T }>
  }

  send(message: ParentMessage): void {
    this.process.send(message)
  }

  /** Kills it with -9, leaving whatever lock it holds behind. */
  async kill(): Promise<void> {
    this.process.kill('SIGKILL')
    assert.equal(await this.exited, 'SIGKILL')
  }
}

/** Starts `count` contenders, then lets them all go at once once every one is ready. */
async function startTogether(count: number, lockPath: string, ...args: string[]): Promise<Contender[]> {
  const contenders = Array.from({ length: count }, () => new Contender(lockPath, ...args))
  await Promise.all(contenders.map((contender) => contender.expect('ready')))
  for (const contender of contenders) contender.send('go')
  return contenders
}

/** The pid of a process that has exited. */
function deadPid(): number {
  return Number(
    execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }),
  )
}

/** Leaves a lock at `lockPath` held by a process killed with -9; returns that pid. */
async function killedHolder(lockPath: string): Promise<number> {
  const [holder] = await startTogether(1, lockPath)
  assert.ok(holder)
  await holder.expect('acquired')
  await holder.kill()
  return holder.pid
}

class Refused extends Error {
  constructor(readonly holderPid: number) {
    super(`held by pid ${holderPid}`)
  }
}
const refuse = (holderPid: number) => new Refused(holderPid)

describe('acquireLockFile', { timeout: 60_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'earshot-lock-file-'))
  after(() => rmSync(directory, { recursive: true, force: true }))
  afterEach(() => {
    for (const child of running) child.kill('SIGKILL')
  })
  let lockCount = 0
  const newLockPath = () => join(directory, `data-${++lockCount}.lock`)

  test('of 20 processes trying at once over a stale lock, exactly one takes it (10 rounds)', async () => {
    const lockPath = newLockPath()
    writeFileSync(lockPath, String(deadPid())) // round 1: a lock file written by an earlier version
    let contenders = await startTogether(20, lockPath)
    for (let round = 1; round <= 10; round++) {
      if (round > 1) for (const contender of contenders) contender.send('go')
      const results = await Promise.all(contenders.map((contender) => contender.next()))
      const winners = contenders.filter((_, index) => results[index]?.type === 'acquired')
      assert.equal(winners.length, 1, `round ${round}: ${JSON.stringify(results)}`)
      const [winner] = winners
      assert.ok(winner)
      for (const [index, result] of results.entries()) {
        if (contenders[index] !== winner) {
          assert.deepEqual(result, { type: 'refused', holderPid: winner.pid }, `round ${round}`)
        }
      }
      // The winner dies holding the lock: the next round starts over its stale lock, with a newcomer.
      await winner.kill()
      const newcomer = new Contender(lockPath)
      await newcomer.expect('ready')
      contenders = [...contenders.filter((contender) => contender !== winner), newcomer]
    }
    for (const contender of contenders) contender.send('exit')
    assert.deepEqual(
      await Promise.all(contenders.map((one) => one.exited)),
      contenders.map(() => 0),
    )
  })

  test('20 processes taking turns, half of them killed while holding it, never hold it together', async () => {
    const lockPath = newLockPath()
    const logPath = join(directory, 'turns.log')
    writeFileSync(logPath, '')
    await killedHolder(lockPath)
    const releasing = await startTogether(10, lockPath, 'turns', logPath, 'release')
    const killed = await startTogether(10, lockPath, 'turns', logPath, 'kill')
    assert.deepEqual(
      await Promise.all(releasing.map((contender) => contender.exited)),
      releasing.map(() => 0),
    )
    assert.deepEqual(
      await Promise.all(killed.map((contender) => contender.exited)),
      killed.map(() => 'SIGKILL'),
    )
    const lines = readFileSync(logPath, 'utf8').trimEnd().split('\n')
    assert.equal(lines.length, 40)
    for (let index = 0; index < lines.length; index += 2) {
      const pid = lines[index]?.replace(/^enter /, '')
      assert.equal(lines[index + 1], `exit ${pid}`, `overlap at line ${index + 2}: ${lines.join(', ')}`)
    }
    const pids = new Set([...releasing, ...killed].map((contender) => String(contender.pid)))
    assert.deepEqual(new Set(lines.map((line) => line.split(' ')[1])), pids, 'every contender had one turn')
  })

  test('a live holder in another process is refused at once, naming its pid', async () => {
    const lockPath = newLockPath()
    const [holder] = await startTogether(1, lockPath)
    assert.ok(holder)
    await holder.expect('acquired')
    assert.throws(
      () => acquireLockFile(lockPath, refuse),
      (error: unknown) => error instanceof Refused && error.holderPid === holder.pid,
    )
    holder.send('release')
    await holder.expect('released')
    const release = acquireLockFile(lockPath, refuse)
    release()
    holder.send('exit')
    assert.equal(await holder.exited, 0)
  })

  test('another process is refused while this one holds it, and this one again', async () => {
    const lockPath = newLockPath()
    const release = acquireLockFile(lockPath, refuse)
    try {
      const [contender] = await startTogether(1, lockPath)
      assert.ok(contender)
      assert.deepEqual(await contender.next(), { type: 'refused', holderPid: process.pid })
      contender.send('exit')
      assert.equal(await contender.exited, 0)
      assert.throws(
        () => acquireLockFile(lockPath, refuse),
        (error: unknown) => error instanceof Refused && error.holderPid === process.pid,
      )
    } finally {
      release()
    }
    assert.equal(existsSync(lockPath), false, 'release removes the lock')
    release() // a second release does nothing
    acquireLockFile(lockPath, refuse)()
  })

  test('a lock left by a process killed with -9 is taken over', async () => {
    const lockPath = newLockPath()
    await killedHolder(lockPath)
    const release = acquireLockFile(lockPath, refuse)
    release()
    assert.equal(existsSync(lockPath), false)
  })

  test('a lock file of an earlier version is refused while its process runs, taken over once it is gone', async () => {
    const lockPath = newLockPath()
    const [live] = await startTogether(1, newLockPath())
    assert.ok(live)
    await live.expect('acquired')
    writeFileSync(lockPath, String(live.pid))
    assert.throws(
      () => acquireLockFile(lockPath, refuse),
      (error: unknown) => error instanceof Refused && error.holderPid === live.pid,
    )
    await live.kill()
    acquireLockFile(lockPath, refuse)()
    writeFileSync(lockPath, '') // killed between creating and writing it
    acquireLockFile(lockPath, refuse)()
    assert.equal(existsSync(lockPath), false)
  })

  test('what crashes leave behind does not block: an empty lock, a half-built one, a predecessor with our pid', () => {
    const lockPath = newLockPath()
    mkdirSync(lockPath)
    acquireLockFile(lockPath, refuse)()

    const halfBuilt = `${lockPath}.pid-${deadPid()}-0-0123456789abcdef`
    mkdirSync(halfBuilt)
    writeFileSync(join(halfBuilt, 'pid'), '')
    acquireLockFile(lockPath, refuse)()
    assert.deepEqual(
      readdirSync(directory).filter((name) => name.startsWith(`${basename(lockPath)}.`)),
      [],
      'a dead process’s half-built lock is removed',
    )

    // A container restarted after kill -9 runs as the same pid as the process that left the lock.
    mkdirSync(lockPath)
    writeFileSync(join(lockPath, `pid-${process.pid}-0-0123456789abcdef`), '')
    acquireLockFile(lockPath, refuse)()
  })

  test('an unrecognised lock is refused rather than removed', () => {
    const lockPath = newLockPath()
    mkdirSync(lockPath)
    writeFileSync(join(lockPath, 'notes.txt'), '')
    assert.throws(() => acquireLockFile(lockPath, refuse), LockHeldError)
    assert.ok(existsSync(join(lockPath, 'notes.txt')))
  })
})
