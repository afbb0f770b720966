import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import {
  type BackendName,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { setEnvironment } from '@earshot/test-kit/environment'
import { latch } from '@earshot/test-kit/eventually'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { type S3Server, startS3Server } from '@earshot/test-kit/s3-server'
import type { MediaStore, StoredFile } from './media-store.js'
import { sweepOrphanedMedia } from './media-upkeep.js'
import { storeClaimed } from './upload-claims.js'

/** The orphan sweep against uploads in flight, on both stores and both backends. */

const MiB = 1024 * 1024
const muchLater = () => Date.now() + 2 * 86_400_000

let unavailable = ''
const s3 = await startS3Server({ onUnavailable: (reason) => (unavailable = reason) })
after(() => s3?.close())

for (const backend of testBackends) {
  describeSweep(backend, 'directory')
  if (s3) describeSweep(backend, 'bucket', s3)
  else test(`orphan sweep (${backend}, bucket)`, { skip: `s3rver did not start (${unavailable})` })
}

function describeSweep(backend: BackendName, kind: 'directory' | 'bucket', server?: S3Server) {
  describe(`orphan sweep (${backend}, ${kind})`, { timeout: 90_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let restoreEnvironment = () => {}

    before(async () => {
      if (server) {
        // The AWS SDK's own settings, as an operator gives them.
        restoreEnvironment = setEnvironment({
          AWS_ENDPOINT_URL_S3: server.endpoint,
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'S3RVER',
          AWS_SECRET_ACCESS_KEY: 'S3RVER',
        })
      }
      const bucket = server && { mediaS3Bucket: server.bucket, mediaS3ForcePathStyle: true }
      platform = await startTestPlatform(backend, { ...bucket })
      partner = await createPartner(platform, `Sweep ${kind}`)
    })
    after(async () => {
      await platform?.stop()
      restoreEnvironment()
    })

    const newRecording = () =>
      ingest(platform, partner.enterpriseId, {
        deviceUid: 'dev-sweep',
        title: 'swept',
        recordedAt: '2026-11-01T08:00:00Z',
        denoiseUrl: 'https://cdn.example/a.mp3',
        recordDuration: 1,
      })

    test('an upload swept between its completion and its commit stays playable', async () => {
      const audioId = await newRecording()
      const store = platform.context.media.store
      const paused = pausedAfterPut(store)
      Object.assign(platform.context.media, { store: paused.store })
      // Over one 8 MiB part: a multipart upload in the bucket, whose LastModified is when it started.
      const bytes = randomBytes(9 * MiB)
      try {
        const uploaded = adminClientOf(platform).uploadAudio(partner.enterpriseId, audioId, bytes, {
          contentType: 'audio/wav',
        })
        const answeredFirst = uploaded.then(() => Promise.reject(new Error('answered before it was stored')))
        await Promise.race([paused.stored, answeredFirst])
        await sweep(store)
        paused.resume()
        await uploaded
      } finally {
        paused.resume()
        Object.assign(platform.context.media, { store })
      }
      const fetched = await fetch(await linkOf(audioId))
      assert.equal(fetched.status, 200)
      assert.ok(Buffer.from(await fetched.arrayBuffer()).equals(bytes), 'the bytes uploaded')
    })

    test('the sweep removes a file no upload claims any more and no recording names, and only that', async () => {
      const audioId = await newRecording()
      const { db } = platform.context
      const store = platform.context.media.store
      const died = await storedUnnamed(audioId, 'died')
      const unclaimed = `${partner.enterpriseId}/unclaimed${randomBytes(4).toString('hex')}`
      await store.put(unclaimed, Readable.from([randomBytes(10)]), {
        maxBytes: 100,
        contentType: 'audio/wav',
      })
      const inFlight = await storedUnnamed(audioId, 'in-flight')
      await backdateClaim(died)
      assert.ok((await sweep(store)) >= 2)
      assert.equal(await store.read(died), undefined, 'the upload that died two days ago')
      assert.equal(await store.read(unclaimed), undefined, 'the file no upload claimed')
      assert.ok(await store.read(inFlight), 'the upload whose claim is within its grace')
      const claims = await db.query('SELECT store_key FROM media_uploads WHERE store_key = $1', [died])
      assert.deepEqual(claims, [], 'the claim let go')
    })

    test('an upload whose claim was let go before its commit fails, and names nothing', async () => {
      const audioId = await newRecording()
      const store = platform.context.media.store
      const paused = pausedAfterPut(store)
      Object.assign(platform.context.media, { store: paused.store })
      try {
        const uploaded = adminClientOf(platform).uploadAudio(
          partner.enterpriseId,
          audioId,
          randomBytes(1000),
          {
            contentType: 'audio/wav',
          },
        )
        const answeredFirst = uploaded.then(() => Promise.reject(new Error('answered before it was stored')))
        await Promise.race([paused.stored, answeredFirst])
        const [claim] = await platform.context.db.query<{ store_key: string }>(
          'SELECT store_key FROM media_uploads WHERE audio_id = $1',
          [audioId],
        )
        await backdateClaim(claim?.store_key as string)
        await sweep(store)
        paused.resume()
        await assert.rejects(uploaded)
      } finally {
        paused.resume()
        Object.assign(platform.context.media, { store })
      }
      const named = await platform.context.db.query('SELECT 1 FROM recording_audio WHERE audio_id = $1', [
        audioId,
      ])
      assert.deepEqual(named, [])
    })

    /** A sweep two days on: the store's timestamps say every file is older than any grace. */
    const sweep = (store: MediaStore) =>
      sweepOrphanedMedia(
        platform.context.db,
        store,
        muchLater(),
        platform.context.config.mediaUploadGraceSeconds,
      )

    /** A file stored by an upload that claimed it and has not (yet) committed. */
    async function storedUnnamed(audioId: string, name: string): Promise<string> {
      const key = `${partner.enterpriseId}/${name}${randomBytes(4).toString('hex')}`
      const owner = { key, enterpriseId: partner.enterpriseId, audioId }
      const body = Readable.from([randomBytes(10)])
      await storeClaimed(platform.context.db, platform.context.media.store, owner, body, {
        maxBytes: 100,
        contentType: 'audio/wav',
      })
      return key
    }

    /** The claim's upload started, and finished, two days ago by the database's clock. */
    async function backdateClaim(key: string): Promise<void> {
      await platform.context.db.query(
        `UPDATE media_uploads SET started_at = started_at - interval '2 days',
                                  finished_at = finished_at - interval '2 days' WHERE store_key = $1`,
        [key],
      )
    }

    async function linkOf(audioId: string): Promise<string> {
      const reply = await partner.call('/openapi/v1/audios', { audioId })
      const items = (reply.plaintext as { items: { data: { denoiseUrl: string } }[] }).items
      return items[0]?.data.denoiseUrl as string
    }
  })
}

/** The store, but each upload, once stored whole, waits for resume() before the caller hears of it. */
function pausedAfterPut(store: MediaStore): { store: MediaStore; stored: Promise<void>; resume(): void } {
  const stored = latch()
  const gate = latch()
  const paused: MediaStore = {
    description: store.description,
    async put(key: string, body: Readable, options: { maxBytes: number; contentType: string }) {
      const file: StoredFile = await store.put(key, body, options)
      stored.signal()
      await gate.done
      return file
    },
    read: (key, range) => store.read(key, range),
    remove: (key) => store.remove(key),
    list: () => store.list(),
    removeUnfinished: (before) => store.removeUnfinished(before),
  }
  return { store: paused, stored: stored.done, resume: gate.signal }
}
