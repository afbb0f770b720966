import { mkdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { Database, Queryable } from './database.js'
import { acquireLockFile, LockHeldError } from './lock-file.js'
import {
  type ErrorData,
  type PgliteWasm,
  READY_ID,
  type Reply,
  type Request,
  type WorkerData,
} from './pglite-messages.js'

export interface PgliteOptions {
  /** The error for a data directory another live process holds; LockHeldError by default. */
  refuseLocked?: (directory: string, holderPid: number) => Error
  /** In memory only: start as a copy of the database `dumpTo` wrote to this file (skipping initdb). */
  image?: string | undefined
}

/** The embedded database, which can also write itself to a file for `image`. */
export interface PgliteDatabase extends Database {
  dumpTo(file: string): Promise<void>
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
  { refuseLocked = inUse, image }: PgliteOptions = {},
): Promise<PgliteDatabase> {
  const directory = dataDir && dataDir !== 'memory://' ? resolve(dataDir) : undefined
  let release = () => {}
  if (directory) {
    mkdirSync(dirname(directory), { recursive: true })
    release = acquireLockFile(`${directory}.lock`, (holderPid) => refuseLocked(directory, holderPid))
  }
  try {
    const wasm = await compiledWasm()
    return await startWorker({ dataDir: directory, image: directory ? undefined : image, wasm }, release)
  } catch (error) {
    release()
    throw error
  }
}

// The global of every Node this runs on, which @types/node 20 does not describe.
declare const WebAssembly: { compile(bytes: Uint8Array): Promise<PgliteWasm['pgliteWasmModule']> }

let compiling: Promise<PgliteWasm | undefined> | undefined

/**
 * PGlite's WebAssembly, compiled once for the whole process and shared by every worker: each worker
 * compiling its own spends most of a second of CPU on it, and freeing that code again at each close is
 * the churn under which V8 has been seen to crash. Undefined where PGlite is not installed (the worker
 * then says so) or its files are not where they are looked for (each worker then compiles its own).
 */
function compiledWasm(): Promise<PgliteWasm | undefined> {
  compiling ??= (async () => {
    const entry = import.meta.resolve('@electric-sql/pglite')
    const compile = async (file: string) => WebAssembly.compile(await readFile(new URL(file, entry)))
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
      compile('pglite.wasm'),
      compile('initdb.wasm'),
    ])
    return { pgliteWasmModule, initdbWasmModule }
  })().catch(() => undefined)
  return compiling
}

interface Pending {
  resolve(rows: unknown[] | undefined): void
  reject(error: Error): void
  /** Where it was asked, for the stack of an error. */
  site: Error
}

/**
 * The requests to the worker and their answers: each request has an id, its answer settles it; the
 * worker's NOTIFYs go to their listeners. Once the worker stops (or the database is closed), every
 * request pending or made is refused with why.
 */
class WorkerChannel {
  readonly #pending = new Map<number, Pending>()
  readonly #listeners = new Map<number, (payload: string) => void>()
  #nextId = READY_ID + 1
  /** Why requests are refused: closed, or the worker stopped. */
  stopped: Error | undefined

  constructor(readonly worker: Worker) {
    worker.on('message', (reply: Reply) => this.#answer(reply))
    worker.on('error', (error) =>
      this.stop(new Error(`the PGlite worker failed: ${error.message}`, { cause: error })),
    )
    worker.on('exit', (code) => this.stop(new Error(`the PGlite worker stopped (exit code ${code})`)))
  }

  /** The worker's first message says whether PGlite opened. */
  ready(): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.#pending.set(READY_ID, { resolve, reject, site: new Error() }),
    )
  }

  nextId(): number {
    return this.#nextId++
  }

  stop(reason: Error): void {
    this.stopped ??= reason
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(reason)
  }

  /** Sends a request under `id` and waits for its answer; `site` is the caller's stack. */
  call(id: number, request: Request, site: Error): Promise<unknown[] | undefined> {
    return new Promise((resolve, reject) => {
      if (this.stopped) {
        reject(this.stopped)
        return
      }
      this.#pending.set(id, { resolve, reject, site })
      if (this.#pending.size === 1) this.worker.ref()
      try {
        this.worker.postMessage(request)
      } catch (error) {
        this.#settle(id)
        reject(error as Error) // a parameter that cannot be sent to another thread
      }
    })
  }

  ask(request: Request & { id: number }, site = new Error()): Promise<unknown[] | undefined> {
    return this.call(request.id, request, site)
  }

  async query<Row>(sql: string, params: readonly unknown[] | undefined, tx?: number): Promise<Row[]> {
    const id = this.nextId()
    const site = new Error()
    const request: Request =
      tx === undefined ? { op: 'query', id, sql, params } : { op: 'tx-query', id, tx, sql, params }
    return ((await this.call(id, request, site)) ?? []) as Row[]
  }

  listenAs(listener: number, onNotify: (payload: string) => void): void {
    this.#listeners.set(listener, onNotify)
  }

  /** False when it was not listening (any more). */
  unlistenAs(listener: number): boolean {
    return this.#listeners.delete(listener)
  }

  #answer(reply: Reply): void {
    if ('notify' in reply) {
      this.#listeners.get(reply.notify)?.(reply.payload)
      return
    }
    const request = this.#settle(reply.id)
    if (!request) return
    if ('error' in reply) request.reject(errorFrom(reply.error, request.site))
    else request.resolve(reply.rows)
  }

  #settle(id: number): Pending | undefined {
    const request = this.#pending.get(id)
    if (!request) return undefined
    this.#pending.delete(id)
    if (this.#pending.size === 0) this.worker.unref()
    return request
  }
}

async function startWorker(workerData: WorkerData, release: () => void): Promise<PgliteDatabase> {
  // Started from a line of code that imports the module rather than from the module's file: a worker
  // started from a file refuses --input-type (this process's, when it runs code given with -e), and
  // passing execArgv instead fails on the options a worker cannot take.
  const module = new URL('./pglite-worker.js', import.meta.url).href
  const worker = new Worker(`import(${JSON.stringify(module)})`, {
    eval: true,
    workerData,
  })
  const link = new WorkerChannel(worker)
  await link.ready().catch(async (error: unknown) => {
    await worker.terminate()
    throw error
  })
  let closing: Promise<void> | undefined
  return {
    kind: 'pglite',
    query: (sql, params) => link.query(sql, params),
    transaction: (fn) => transaction(link, fn),
    session: (fn) => fn({ query: (sql, params) => link.query(sql, params) }),
    async listen(channel, onNotify) {
      const listener = link.nextId()
      link.listenAs(listener, onNotify)
      try {
        await link.ask({ op: 'listen', id: link.nextId(), channel, listener })
      } catch (error) {
        link.unlistenAs(listener)
        throw error
      }
      return async () => {
        // After close, nothing is listening any more.
        if (!link.unlistenAs(listener) || link.stopped) return
        await link.ask({ op: 'unlisten', id: link.nextId(), listener })
      }
    },
    async dumpTo(file) {
      await link.ask({ op: 'dump', id: link.nextId(), file })
    },
    close() {
      closing ??= (async () => {
        try {
          if (!link.stopped) await link.ask({ op: 'close', id: link.nextId() })
        } finally {
          link.stop(new Error('the database is closed'))
          await worker.terminate()
          release()
        }
      })()
      return closing
    },
  }
}

/** fn's statements in one transaction of the worker: committed when fn resolves, rolled back when it throws. */
async function transaction<T>(link: WorkerChannel, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  if (link.stopped) throw link.stopped
  const id = link.nextId()
  const outcome = link.call(id, { op: 'begin', id }, new Error())
  outcome.catch(() => {}) // awaited below; it may fail (BEGIN refused) while fn still runs
  const end = (commit: boolean) => {
    if (!link.stopped) link.worker.postMessage({ op: 'end', tx: id, commit } satisfies Request)
  }
  let result: T
  try {
    result = await fn({ query: (sql, params) => link.query(sql, params, id) })
  } catch (error) {
    end(false)
    await outcome.catch(() => {})
    throw error
  }
  end(true)
  await outcome
  return result
}

/** The worker's error as an Error of this thread, with its fields and the stack of the call that failed. */
function errorFrom(data: ErrorData, site: Error): Error {
  const error = Object.assign(new Error(data.message), data.fields)
  error.name = data.name
  const frames = site.stack?.split('\n').slice(1).join('\n')
  error.stack = `${data.name}: ${data.message}${frames ? `\n${frames}` : ''}`
  return error
}
