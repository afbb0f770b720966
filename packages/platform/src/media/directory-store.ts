import { randomUUID } from 'node:crypto'
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { HashingMeter } from './hashing-meter.js'
import type { ByteRange, MediaStore, StoredFile } from './media-store.js'

/** Reads of 256 KiB: a quarter of the system calls and buffers of the default 64 KiB for a large file. */
const READ_CHUNK_BYTES = 256 * 1024

/** Unfinished uploads, beside the files so that the rename that publishes one stays on one file system. */
const PARTIAL = '.partial'

/**
 * Stored audio in a directory (several instances may share it on one volume). An upload is written to a
 * temporary file, flushed to disk, then renamed to its key: a reader sees the whole file or none.
 */
export class DirectoryStore implements MediaStore {
  readonly description: string
  #partialMade = false

  constructor(private readonly root: string) {
    this.description = `directory ${root}`
  }

  async put(
    key: string,
    body: Readable,
    options: { maxBytes: number; contentType: string },
  ): Promise<StoredFile> {
    const target = this.#pathOf(key)
    const partial = join(this.root, PARTIAL, `${randomUUID()}.part`)
    // Made without a wait, so the body is piped before anything else runs: an error it emits is caught.
    if (!this.#partialMade) mkdirSync(dirname(partial), { recursive: true })
    this.#partialMade = true
    const meter = new HashingMeter(options.maxBytes)
    try {
      // flush: the file is on disk before it closes, and so before the rename publishes it.
      await pipeline(body, meter, createWriteStream(partial, { flags: 'wx', flush: true }))
    } catch (error) {
      await rm(partial, { force: true })
      throw error
    }
    await mkdir(dirname(target), { recursive: true })
    await rename(partial, target)
    await syncDirectory(dirname(target))
    return meter.stored()
  }

  async read(key: string, range?: ByteRange): Promise<Readable | undefined> {
    // A path, not a FileHandle: the stream then reads with callbacks, as node:http servers do, rather than
    // a promise per chunk (measured: fewer objects, far fewer full garbage collections while serving).
    const stream = createReadStream(this.#pathOf(key), { highWaterMark: READ_CHUNK_BYTES, ...(range ?? {}) })
    const found = await new Promise<boolean>((resolve, reject) => {
      stream.once('ready', () => resolve(true))
      stream.once('error', (error: NodeJS.ErrnoException) =>
        error.code === 'ENOENT' ? resolve(false) : reject(error),
      )
    })
    return found ? stream : undefined
  }

  async remove(key: string): Promise<void> {
    await rm(this.#pathOf(key), { force: true })
  }

  async *list(): AsyncIterable<{ key: string; writtenAt: number }> {
    const entries = await readdir(this.root, { recursive: true, withFileTypes: true }).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return []
        throw error
      },
    )
    for (const entry of entries) {
      if (!entry.isFile()) continue
      const path = join(entry.parentPath, entry.name)
      const key = relative(this.root, path).split(sep).join('/')
      if (key.startsWith(`${PARTIAL}/`)) continue
      const written = await stat(path).catch(() => undefined)
      if (written) yield { key, writtenAt: written.mtimeMs }
    }
  }

  async removeUnfinished(before: number): Promise<number> {
    const dir = join(this.root, PARTIAL)
    const names = await readdir(dir).catch(() => [] as string[])
    let removed = 0
    for (const name of names) {
      const written = await stat(join(dir, name)).catch(() => undefined)
      if (written && written.mtimeMs < before) {
        await rm(join(dir, name), { force: true })
        removed++
      }
    }
    return removed
  }

  #pathOf(key: string): string {
    if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/.test(key)) throw new Error(`not a media key: ${key}`)
    return join(this.root, ...key.split('/'))
  }
}

async function syncDirectory(path: string): Promise<void> {
  const dir = await open(path, 'r')
  try {
    await dir.sync()
  } finally {
    await dir.close()
  }
}
