import type { PGliteOptions } from '@electric-sql/pglite'

/**
 * The messages between openPglite (main thread) and the worker thread that runs PGlite
 * (pglite-worker.ts). Every request carries an id its reply repeats; a transaction is the `begin`
 * request (answered when the transaction is over), the `tx-query` requests naming it, and one `end`.
 */

export type Request =
  | { op: 'query'; id: number; sql: string; params: readonly unknown[] | undefined }
  /** Answered once the transaction is committed or rolled back; its id names the transaction. */
  | { op: 'begin'; id: number }
  | { op: 'tx-query'; id: number; tx: number; sql: string; params: readonly unknown[] | undefined }
  /** No answer: `begin`'s answer tells how it went. */
  | { op: 'end'; tx: number; commit: boolean }
  | { op: 'listen'; id: number; channel: string; listener: number }
  | { op: 'unlisten'; id: number; listener: number }
  | { op: 'close'; id: number }
  /** Writes the whole data directory, as PGlite dumps it, to the file. */
  | { op: 'dump'; id: number; file: string }

/** What an error keeps across the thread boundary: its message and name, and its primitive fields (code, detail, …). */
export interface ErrorData {
  message: string
  name: string
  fields: Record<string, string | number | boolean>
}

export type Reply =
  | { id: number; rows?: unknown[] }
  | { id: number; error: ErrorData }
  /** A NOTIFY on the channel of this listener, with its payload. */
  | { notify: number; payload: string }

/** The id of the worker's first message: PGlite is open (or failed to open, with the error). */
export const READY_ID = 0

export interface WorkerData {
  /** The absolute data directory; undefined keeps the database in memory. */
  dataDir: string | undefined
  /** A file `dump` wrote: the in-memory database starts as a copy of that one. */
  image: string | undefined
  /** PGlite's WebAssembly, compiled once by this process; undefined: the worker compiles its own. */
  wasm: PgliteWasm | undefined
}

/** PGlite's two WebAssembly modules, as PGlite.create takes them. */
export type PgliteWasm = Required<Pick<PGliteOptions, 'pgliteWasmModule' | 'initdbWasmModule'>>

export function errorData(error: unknown): ErrorData {
  if (!(error instanceof Error)) return { message: String(error), name: 'Error', fields: {} }
  const fields: Record<string, string | number | boolean> = {}
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      fields[key] = value
    }
  }
  return { message: error.message, name: error.name, fields }
}
