import type { Readable } from 'node:stream'
import type { ByteRange } from './byte-range.js'

/** What a store kept of an upload, once it is complete and visible under its key. */
export interface StoredFile {
  bytes: number
  /** Lower-case hex. */
  sha256: string
}

export type { ByteRange } from './byte-range.js'

/**
 * Where stored audio lives: a directory or an S3-compatible bucket. Keys are chosen by the caller and never
 * reused; a file is written whole under a key or not at all.
 */
export interface MediaStore {
  /** What the store is, for logs and `/metrics` ("directory /var/lib/earshot/media", "bucket s3://audio"). */
  readonly description: string
  /**
   * Streams `body` into the store under `key`, hashing it on the way; the file becomes visible only once the
   * whole body is written and durable. Over `maxBytes` it rejects with MediaTooLargeError; when the body
   * fails or is cut, it rejects with that error. Either way nothing is left under the key.
   */
  put(key: string, body: Readable, options: { maxBytes: number; contentType: string }): Promise<StoredFile>
  /** The file's bytes (those of `range` only, when given); undefined when no file has that key. */
  read(key: string, range?: ByteRange): Promise<Readable | undefined>
  /** Removes the file; a key with no file is not an error. */
  remove(key: string): Promise<void>
  /** Every visible file's key and when it was written (epoch ms), for the sweep of orphaned files. */
  list(): AsyncIterable<{ key: string; writtenAt: number }>
  /** Removes what unfinished uploads left behind (temporary files, multipart parts) older than `before`. */
  removeUnfinished(before: number): Promise<number>
}

/** An upload over the size limit (4130 on the admin API). */
export class MediaTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the audio is larger than the limit of ${maxBytes} bytes (EARSHOT_MEDIA_MAX_BYTES)`)
    this.name = 'MediaTooLargeError'
  }
}
