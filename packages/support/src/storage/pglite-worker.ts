/**
 * The worker thread that runs PGlite for openPglite (pglite.ts): PGlite runs its WebAssembly
 * synchronously on the thread that calls it, so here it never holds up the event loop of the thread
 * serving requests. Requests are run in the order they arrive, through PGlite's own locks: a query
 * waits while a transaction is open, a transaction's queries run inside it.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { parentPort, workerData } from 'node:worker_threads'
import type { PGlite, Transaction } from '@electric-sql/pglite'
import { INT8_OID, parseInt8 } from './database.js'
import { importOptional } from './optional-module.js'
import { errorData, READY_ID, type Reply, type Request, type WorkerData } from './pglite-messages.js'
import { type PreparedStatements, preparedStatements } from './pglite-statements.js'

if (!parentPort) throw new Error('pglite-worker.js runs in a worker thread started by openPglite')
const port = parentPort

const send = (reply: Reply) => port.postMessage(reply)

/** Sends the outcome of `work` as the answer to request `id`. */
function answer(id: number, work: Promise<unknown[] | undefined>): void {
  work.then(
    (rows) => {
      try {
        send(rows === undefined ? { id } : { id, rows })
      } catch (error) {
        send({ id, error: errorData(error) }) // rows that cannot be cloned
      }
    },
    (error: unknown) => send({ id, error: errorData(error) }),
  )
}

interface OpenTransaction {
  /** Resolves to the transaction once PGlite has begun it. */
  tx: Promise<Transaction>
  end(commit: boolean): void
}

/** Thrown inside PGlite's transaction to have it rolled back; never leaves this module. */
const ROLLBACK = Symbol('rollback')

/**
 * A copy of an image lives in memory, so a large buffer pool only copies its files again; and PostgreSQL's
 * 128 MB of shared buffers cost about 0.4 s of CPU at each start, which a test platform pays at every
 * start. Other databases keep PGlite's settings.
 */
const IMAGE_COPY_SETTINGS = ['-c', 'shared_buffers=16MB']

/** PGlite open in the data directory main gave; undefined (and the error sent) when it cannot be opened. */
async function openDatabase(): Promise<{ db: PGlite; statements: PreparedStatements } | undefined> {
  try {
    const { dataDir, image, wasm } = workerData as WorkerData
    const pglite = await importOptional('@electric-sql/pglite', () => import('@electric-sql/pglite'))
    const loadDataDir = image === undefined ? undefined : imageBlob(await readFile(image))
    const db = await pglite.PGlite.create(dataDir, {
      parsers: { [INT8_OID]: parseInt8 },
      loadDataDir,
      startParams: loadDataDir && [...pglite.PGlite.defaultStartParams, ...IMAGE_COPY_SETTINGS],
      ...wasm,
    })
    return { db, statements: preparedStatements(db, pglite) }
  } catch (error) {
    send({ id: READY_ID, error: errorData(error) }) // main terminates this thread
    return undefined
  }
}

/**
 * The image as the Blob PGlite reads it from. PGlite asks it only for arrayBuffer(), which a Blob of Node
 * answers by streaming its bytes through 64 KiB reads and joining them: about half a second of CPU for an
 * image of 40 MB, at every test platform's start. This one hands over the bytes already read.
 */
function imageBlob(bytes: Buffer): Blob {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  const buffer = (
    whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
  ) as ArrayBuffer
  return Object.assign(new Blob([]), { arrayBuffer: async () => buffer })
}

const opened = await openDatabase()
if (opened) serve(opened.db, opened.statements)

/** Begins transaction `id`: its queries run in it until `end`; answered once it is over. */
function begin(db: PGlite, transactions: Map<number, OpenTransaction>, id: number): void {
  let opened!: (tx: Transaction) => void
  let failed!: (error: unknown) => void
  const tx = new Promise<Transaction>((resolve, reject) => {
    opened = resolve
    failed = reject
  })
  tx.catch(() => {}) // a transaction that never began: its queries are answered with the error
  let end!: (commit: boolean) => void
  const ended = new Promise<boolean>((resolve) => {
    end = resolve
  })
  transactions.set(id, { tx, end })
  const done = db
    .transaction(async (transaction) => {
      opened(transaction)
      if (!(await ended)) throw ROLLBACK
    })
    .catch((error: unknown) => {
      failed(error)
      if (error !== ROLLBACK) throw error
    })
    .finally(() => {
      transactions.delete(id)
      failed(new Error('the transaction is over'))
    })
  answer(
    id,
    done.then(() => undefined),
  )
}

function serve(db: PGlite, statements: PreparedStatements): void {
  const transactions = new Map<number, OpenTransaction>()
  const unlisteners = new Map<number, () => Promise<void>>()

  port.on('message', (request: Request) => {
    switch (request.op) {
      case 'query':
        answer(request.id, statements.run(request.sql, request.params))
        break
      case 'begin':
        begin(db, transactions, request.id)
        break
      case 'tx-query': {
        const open = transactions.get(request.tx)
        answer(
          request.id,
          open
            ? open.tx.then((tx) => statements.runIn(tx, request.sql, request.params))
            : Promise.reject(new Error('the transaction is over')),
        )
        break
      }
      case 'end':
        transactions.get(request.tx)?.end(request.commit)
        break
      case 'listen': {
        const { listener } = request
        answer(
          request.id,
          db
            .listen(request.channel, (payload) => send({ notify: listener, payload }))
            .then((unlisten) => {
              unlisteners.set(listener, unlisten)
              return undefined
            }),
        )
        break
      }
      case 'unlisten': {
        const unlisten = unlisteners.get(request.listener)
        unlisteners.delete(request.listener)
        answer(
          request.id,
          (unlisten?.() ?? Promise.resolve()).then(() => undefined),
        )
        break
      }
      case 'dump':
        answer(
          request.id,
          db
            .dumpDataDir('none')
            .then(async (dump) => writeFile(request.file, Buffer.from(await dump.arrayBuffer())))
            .then(() => undefined),
        )
        break
      case 'close':
        answer(
          request.id,
          db.close().then(() => undefined),
        )
        break
    }
  })

  send({ id: READY_ID })
}
