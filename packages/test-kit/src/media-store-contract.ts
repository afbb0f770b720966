import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { describe, test } from 'node:test'
import { type MediaStore, MediaTooLargeError } from '@earshot/platform'

/** The behaviour every media store has, whatever holds the bytes (media-store.ts). */
export function describeMediaStore(name: string, open: () => Promise<MediaStore>): void {
  describe(`${name}: the media store contract`, { timeout: 60_000 }, () => {
    test('keeps a file whole, hashed, and reads it back whole or by range', async () => {
      const store = await open()
      const bytes = randomBytes(300_000)
      const key = `1/${randomKey()}`
      const stored = await store.put(key, Readable.from(chunksOf(bytes, 65_536)), {
        maxBytes: 1_000_000,
        contentType: 'audio/wav',
      })
      assert.deepEqual(stored, { bytes: bytes.length, sha256: sha256(bytes) })
      assert.deepEqual(await readAll(store, key), bytes)
      const part = await store.read(key, { start: 1000, end: 1999 })
      assert.ok(part)
      assert.deepEqual(await buffer(part), bytes.subarray(1000, 2000))
      assert.ok(await has(store, key), 'list() names the file')
      await store.remove(key)
      assert.equal(await store.read(key), undefined, 'a removed file is gone')
      await store.remove(key)
    })

    test('an upload over the limit fails and leaves nothing under its key', async () => {
      const store = await open()
      const key = `1/${randomKey()}`
      await assert.rejects(
        store.put(key, Readable.from(chunksOf(randomBytes(200_000), 50_000)), {
          maxBytes: 100_000,
          contentType: 'audio/wav',
        }),
        MediaTooLargeError,
      )
      assert.equal(await store.read(key), undefined)
      assert.equal(await has(store, key), false)
    })

    test('an upload cut half-way fails and leaves nothing under its key', async () => {
      const store = await open()
      const key = `1/${randomKey()}`
      const cut = new Readable({ read() {} })
      cut.push(randomBytes(10_000))
      setImmediate(() => cut.destroy(new Error('connection cut')))
      await assert.rejects(
        store.put(key, cut, { maxBytes: 1_000_000, contentType: 'audio/wav' }),
        /connection cut/,
      )
      assert.equal(await store.read(key), undefined)
      assert.equal(await has(store, key), false)
    })

    test('an empty file is a file', async () => {
      const store = await open()
      const key = `1/${randomKey()}`
      const stored = await store.put(key, Readable.from([]), { maxBytes: 10, contentType: 'audio/wav' })
      assert.deepEqual(stored, { bytes: 0, sha256: sha256(Buffer.alloc(0)) })
      assert.deepEqual(await readAll(store, key), Buffer.alloc(0))
      await store.remove(key)
    })
  })
}

function randomKey(): string {
  return randomBytes(8).toString('hex')
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

function* chunksOf(bytes: Buffer, size: number): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size)
}

async function readAll(store: MediaStore, key: string): Promise<Buffer> {
  const stream = await store.read(key)
  assert.ok(stream, `${key} is stored`)
  return buffer(stream)
}

async function has(store: MediaStore, key: string): Promise<boolean> {
  for await (const file of store.list()) if (file.key === key) return true
  return false
}
