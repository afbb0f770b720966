import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { after, describe, test } from 'node:test'
import {
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  S3ServiceException,
} from '@aws-sdk/client-s3'
import { setEnvironment } from '@earshot/test-kit/environment'
import { describeMediaStore } from '@earshot/test-kit/media-store-contract'
import { type S3Server, startS3Server } from '@earshot/test-kit/s3-server'
import { BucketStore, bucketStoreFromEnvironment } from './bucket-store.js'
import { MediaTooLargeError } from './media-store.js'

const MiB = 1024 * 1024
const wav = 'audio/wav'

// Started before the tests are declared: whether they can run must be known when the contract declares them.
let unavailable = ''
const server = await startS3Server({ onUnavailable: (reason) => (unavailable = reason) })
after(() => server?.close())

if (server) {
  describeMediaStore('bucket store', async () => freshStore(server))
  describeUploads(server)
  describeTheRest(server)
} else {
  test('bucket store', {
    skip: `no S3-compatible server for the test: s3rver did not start (${unavailable})`,
  })
}

function describeUploads(server: S3Server): void {
  describe('bucket store: uploads of several parts, and failed ones', { timeout: 120_000 }, () => {
    test('a body of several parts round-trips, and a range across a part boundary reads right', async () => {
      const store = freshStore(server)
      const bytes = randomBytes(20 * MiB)
      const stored = await store.put('9/large', Readable.from(chunksOf(bytes, MiB)), {
        maxBytes: 32 * MiB,
        contentType: wav,
      })
      assert.deepEqual(stored, { bytes: bytes.length, sha256: sha256(bytes) })
      const whole = await store.read('9/large')
      assert.ok(whole)
      assert.equal(await sha256Of(whole), sha256(bytes))
      const across = await store.read('9/large', { start: 8 * MiB - 1000, end: 8 * MiB + 999 })
      assert.ok(across)
      assert.deepEqual(await buffer(across), bytes.subarray(8 * MiB - 1000, 8 * MiB + 1000))
    })

    test('an upload that passes the limit after its first parts fails and leaves nothing', async () => {
      const store = freshStore(server)
      const body = Readable.from(chunksOf(randomBytes(20 * MiB), MiB))
      await assert.rejects(
        store.put('9/over', body, { maxBytes: 12 * MiB, contentType: wav }),
        MediaTooLargeError,
      )
      assert.equal(await store.read('9/over'), undefined)
      assert.deepEqual(await keysOf(store), [])
    })

    test('a body that has failed already rejects the put, and nothing is stored', async () => {
      const store = freshStore(server)
      const failed = new Readable({ read() {} })
      failed.destroy(new Error('failed before the put'))
      await assert.rejects(
        store.put('9/failed', failed, { maxBytes: 100, contentType: wav }),
        /failed before the put/,
      )
      assert.deepEqual(await keysOf(store), [])
    })

    test('an upload the server refuses rejects with its error, and stops reading the body', async () => {
      const store = new BucketStore({ bucket: 'no-such-bucket', client: server.client })
      let chunksRead = 0
      const body = Readable.from(
        (function* () {
          for (; chunksRead < 64; chunksRead++) yield randomBytes(MiB)
        })(),
      )
      await assert.rejects(store.put('9/refused', body, { maxBytes: 64 * MiB, contentType: wav }), {
        name: 'NoSuchBucket',
      })
      assert.ok(body.destroyed, 'the body is destroyed')
      assert.ok(chunksRead < 64, `read ${chunksRead} of 64 chunks`)
    })
  })
}

function describeTheRest(server: S3Server): void {
  describe('bucket store: prefixes, the sweep, settings from the environment', { timeout: 60_000 }, () => {
    test('lists only the keys under its prefix, relative to it, with when they were written', async () => {
      const store = freshStore(server)
      const other = freshStore(server)
      const before = Date.now()
      await store.put('3/mine', Readable.from([Buffer.from('abc')]), { maxBytes: 10, contentType: wav })
      await other.put('3/theirs', Readable.from([Buffer.from('d')]), { maxBytes: 10, contentType: wav })
      const files = []
      for await (const file of store.list()) files.push(file)
      assert.deepEqual(
        files.map((file) => file.key),
        ['3/mine'],
      )
      // S3 keeps LastModified to the second.
      const writtenAt = files[0]?.writtenAt ?? Number.NaN
      assert.ok(Math.abs(writtenAt - before) < 5_000, `written at ${writtenAt}, put at ${before}`)
      assert.equal(await other.read('3/mine'), undefined)
    })

    test('a missing bucket is an error, not a missing file', async () => {
      const store = new BucketStore({ bucket: 'no-such-bucket', client: server.client })
      await assert.rejects(store.read('3/any'), { name: 'NoSuchBucket' })
    })

    test('names its bucket and prefix', () => {
      assert.equal(
        new BucketStore({ bucket: 'audio', client: server.client }).description,
        'bucket s3://audio',
      )
      const prefixed = new BucketStore({ bucket: 'audio', prefix: 'eu/', client: server.client })
      assert.equal(prefixed.description, 'bucket s3://audio/eu')
    })

    test('removes multipart uploads started before the cutoff', async (t) => {
      const prefix = `test/${randomKey()}`
      const store = freshStore(server, prefix)
      if (!(await listsMultipartUploads(server))) {
        assert.equal(await store.removeUnfinished(Date.now() + 1000), 0, 'NotImplemented is tolerated')
        t.skip('s3rver answers NotImplemented to ListMultipartUploads, so there is nothing to remove')
        return
      }
      const upload = { Bucket: server.bucket, Key: `${prefix}/5/unfinished` }
      await server.client.send(new CreateMultipartUploadCommand(upload))
      assert.equal(await store.removeUnfinished(Date.now() - 60_000), 0, 'a recent upload is left alone')
      assert.equal(await store.removeUnfinished(Date.now() + 1000), 1)
      assert.equal(await store.removeUnfinished(Date.now() + 1000), 0)
    })

    test('bucketStoreFromEnvironment takes the endpoint, region and credentials from the SDK settings', async () => {
      const settings = {
        AWS_ENDPOINT_URL_S3: server.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      }
      await withEnvironment(settings, async () => {
        const store = bucketStoreFromEnvironment(server.bucket, true)
        assert.equal(store.description, `bucket s3://${server.bucket}`)
        const key = `7/${randomKey()}`
        await store.put(key, Readable.from([Buffer.from('hello')]), { maxBytes: 10, contentType: wav })
        const read = await store.read(key)
        assert.ok(read)
        assert.equal((await buffer(read)).toString(), 'hello')
        await store.remove(key)
      })
    })
  })
}

function freshStore(server: S3Server, prefix = `test/${randomKey()}`): BucketStore {
  return new BucketStore({ bucket: server.bucket, prefix, client: server.client })
}

async function listsMultipartUploads(server: S3Server): Promise<boolean> {
  try {
    await server.client.send(new ListMultipartUploadsCommand({ Bucket: server.bucket }))
    return true
  } catch (error) {
    if (error instanceof S3ServiceException && error.name === 'NotImplemented') return false
    throw error
  }
}

async function withEnvironment(settings: Record<string, string>, run: () => Promise<void>): Promise<void> {
  const restore = setEnvironment(settings)
  try {
    await run()
  } finally {
    restore()
  }
}

async function keysOf(store: BucketStore): Promise<string[]> {
  const keys = []
  for await (const file of store.list()) keys.push(file.key)
  return keys
}

function randomKey(): string {
  return randomBytes(8).toString('hex')
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function sha256Of(stream: Readable): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of stream) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

function* chunksOf(bytes: Buffer, size: number): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size)
}
