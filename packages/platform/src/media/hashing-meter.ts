import { createHash } from 'node:crypto'
import { Transform } from 'node:stream'
import { MediaTooLargeError, type StoredFile } from './media-store.js'

/** Passes bytes through, counting and hashing them; fails past the limit. */
export class HashingMeter extends Transform {
  readonly #hash = createHash('sha256')
  #bytes = 0

  constructor(private readonly maxBytes: number) {
    super()
  }

  override _transform(
    chunk: Buffer,
    _encoding: BufferEncoding,
    done: (error?: Error | null, data?: Buffer) => void,
  ) {
    this.#bytes += chunk.length
    if (this.#bytes > this.maxBytes) return done(new MediaTooLargeError(this.maxBytes))
    this.#hash.update(chunk)
    done(null, chunk)
  }

  stored(): StoredFile {
    return { bytes: this.#bytes, sha256: this.#hash.digest('hex') }
  }
}
