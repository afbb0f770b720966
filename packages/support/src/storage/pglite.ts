import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { Database, Queryable } from './database.js'
import { acquireLockFile, LockHeldError } from './lock-file.js'
import { type ErrorData, READY_ID, type Reply, type Request, type WorkerData } from './pglite-messages.js'

export interface PgliteOptions {
  /** The error for a data directory another live process holds; LockHeldError by default. */
  refuseLocked?: (directory: string, holderPid: number) => Error
}

const inUse = (directory: string, holderPid: number) =>
  new LockHeldError(
    `the data directory ${directory} is in use by another Earshot process (pid ${holderPid}); stop it first`,
  )

/**
 * Opens the embedded database in a data directory, held by an exclusive lock file beside it so a
 * second process is refused instead of corrupting it. `dataDir` undefined (or `memory://`) means in
 * memory (tests).
 *
 * PGlite runs its WebAssembly synchronously on the thread that calls it, so it runs in a worker thread
 * (pglite-worker.ts) and this Database forwards to it: a long statement there never holds up this
 * thread's event loop. The semantics are PGlite's own, one connection: queries and transactions run one
 * at a time in the order they are asked (a query waits while a transaction is open); errors keep their
 * PostgreSQL fields (code, detail, constraint, …); int8 arrives as a number. The lock is held by this
 * thread; close() closes PGlite, stops the worker, then releases the lock. While nothing is asked of it
 * the worker does not keep the process alive, as PGlite in-process would not.
 */
export async function openPglite(
  dataDir: string | undefined,
  { refuseLocked = inUse }: PgliteOptions = {},
): Promise<Database> {
  const directory = dataDir && dataDir !== 'memory://' ? resolve(dataDir) : undefined
  let release = () => {}
  if (directory) {
    mkdirSync(dirname(directory), { recursive: true })
    release = acquireLockFile(`${directory}.lock`, (holderPid) => refuseLocked(directory, holderPid))
  }
  try {
    return await startWorker(directory, release)
  } catch (error) {
    release()
    throw error
  }
}

interface Pending {
  resolve(rows: unknown[] | undefined): void
  reject(error: Error): void
  /** Where it was asked, for the stack of an error. */
  site: Error
}

async function startWorker(dataDir: string | undefined, release: () => void): Promise<Database> {
  // Started from a line of code that imports the module rather than from the module's file: a worker
  // started from a file refuses --input-type (this process's, when it runs code given with -e), and
  // passing execArgv instead fails on the options a worker cannot take.
  const module = new URL('./pglite-worker.js', import.meta.url).href
  const worker = new Worker(`import(${JSON.stringify(module)})`, {
    eval: true,
    workerData: { dataDir } satisfies WorkerData,
  })
  const pending = new Map<number, Pending>()
  const listeners = new Map<number, (payload: string) => void>()
  let nextId = READY_ID + 1
  /** Why requests are refused: closed, or the worker stopped. */
  let stopped: Error | undefined
  let closing: Promise<void> | undefined

  const settle = (id: number): Pending | undefined => {
    const request = pending.get(id)
    if (!request) return undefined
    pending.delete(id)
    if (pending.size === 0) worker.unref()
    return request
  }
  const stop = (reason: Error) => {
    stopped ??= reason
    for (const id of [...pending.keys()]) settle(id)?.reject(reason)
  }
  worker.on('message', (reply: Reply) => {
    if ('notify' in reply) {
      listeners.get(reply.notify)?.(reply.payload)
      return
    }
    const request = settle(reply.id)
    if (!request) return
    if ('error' in reply) request.reject(errorFrom(reply.error, request.site))
    else request.resolve(reply.rows)
  })
  worker.on('error', (error) =>
    stop(new Error(`the PGlite worker failed: ${error.message}`, { cause: error })),
  )
  worker.on('exit', (code) => stop(new Error(`the PGlite worker stopped (exit code ${code})`)))

  /** Sends a request under `id` and waits for its answer; `site` is the caller's stack. */
  const call = (id: number, request: Request, site: Error): Promise<unknown[] | undefined> =>
    new Promise((resolve, reject) => {
      if (stopped) {
        reject(stopped)
        return
      }
      pending.set(id, { resolve, reject, site })
      if (pending.size === 1) worker.ref()
      try {
        worker.postMessage(request)
      } catch (error) {
        settle(id)
        reject(error as Error) // a parameter that cannot be sent to another thread
      }
    })
  const ask = (request: Request & { id: number }, site = new Error()) => call(request.id, request, site)
  const query = async <Row>(sql: string, params: readonly unknown[] | undefined, tx?: number) => {
    const id = nextId++
    const site = new Error()
    return ((tx === undefined
      ? await call(id, { op: 'query', id, sql, params }, site)
      : await call(id, { op: 'tx-query', id, tx, sql, params }, site)) ?? []) as Row[]
  }

  // The worker's first message says whether PGlite opened.
  await new Promise((resolve, reject) => pending.set(READY_ID, { resolve, reject, site: new Error() })).catch(
    async (error: unknown) => {
      await worker.terminate()
      throw error
    },
  )

  return {
    kind: 'pglite',
    query: (sql, params) => query(sql, params),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      if (stopped) throw stopped
      const id = nextId++
      const outcome = call(id, { op: 'begin', id }, new Error())
      outcome.catch(() => {}) // awaited below; it may fail (BEGIN refused) while fn still runs
      const end = (commit: boolean) => {
        if (!stopped) worker.postMessage({ op: 'end', tx: id, commit } satisfies Request)
      }
      let result: T
      try {
        result = await fn({ query: (sql, params) => query(sql, params, id) })
      } catch (error) {
        end(false)
        await outcome.catch(() => {})
        throw error
      }
      end(true)
      await outcome
      return result
    },
    session: (fn) => fn({ query: (sql, params) => query(sql, params) }),
    async listen(channel, onNotify) {
      const listener = nextId++
      listeners.set(listener, onNotify)
      try {
        await ask({ op: 'listen', id: nextId++, channel, listener })
      } catch (error) {
        listeners.delete(listener)
        throw error
      }
      return async () => {
        // After close, nothing is listening any more.
        if (!listeners.delete(listener) || stopped) return
        await ask({ op: 'unlisten', id: nextId++, listener })
      }
    },
    close() {
      closing ??= (async () => {
        try {
          if (!stopped) await ask({ op: 'close', id: nextId++ })
        } finally {
          stop(new Error('the database is closed'))
          await worker.terminate()
          release()
        }
      })()
      return closing
    },
  }
}

/** The worker's error as an Error of this thread, with its fields and the stack of the call that failed. */
function errorFrom(data: ErrorData, site: Error): Error {
  const error = Object.assign(new Error(data.message), data.fields)
  error.name = data.name
  const frames = site.stack?.split('\n').slice(1).join('\n')
  error.stack = `${data.name}: ${data.message}${frames ? `\n${frames}` : ''}`
  return error
}
