import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  type MultipartUpload,
  paginateListObjectsV2,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { HashingMeter } from './hashing-meter.js'
import type { ByteRange, MediaStore, StoredFile } from './media-store.js'

/** Each part is buffered in memory while it is sent; at most QUEUE_SIZE are in flight. */
const PART_SIZE = 8 * 1024 * 1024
const QUEUE_SIZE = 2

/**
 * Stored audio in an S3-compatible bucket, under an optional key prefix. An upload is a multipart upload (a
 * single PUT when the body fits in one part): the object appears only when it completes, so a reader sees
 * the whole file or none.
 */
export class BucketStore implements MediaStore {
  readonly description: string
  readonly #bucket: string
  readonly #prefix: string
  readonly #client: S3Client

  constructor(options: { bucket: string; prefix?: string; client: S3Client }) {
    this.#bucket = options.bucket
    this.#prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '')
    this.#client = options.client
    this.description = `bucket s3://${[this.#bucket, this.#prefix].filter(Boolean).join('/')}`
  }

  async put(
    key: string,
    body: Readable,
    options: { maxBytes: number; contentType: string },
  ): Promise<StoredFile> {
    const objectKey = this.#objectKey(key)
    const meter = new HashingMeter(options.maxBytes)
    // Piped before anything is awaited, so that an error the body emits is caught.
    const piped = pipeline(body, meter)
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.#bucket, Key: objectKey, Body: meter, ContentType: options.contentType },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    })
    const uploaded = upload.done().catch((error: unknown) => {
      // In case nothing reads the meter any more: the pipeline would wait forever.
      meter.destroy(error as Error)
      throw error
    })
    const failure = rootFailure(...(await Promise.allSettled([piped, uploaded])))
    if (failure) throw failure.reason
    return meter.stored()
  }

  async read(key: string, range?: ByteRange): Promise<Readable | undefined> {
    const command = new GetObjectCommand({
      Bucket: this.#bucket,
      Key: this.#objectKey(key),
      Range: range ? `bytes=${range.start}-${range.end}` : undefined,
    })
    try {
      const { Body } = await this.#client.send(command)
      if (!(Body instanceof Readable)) throw new Error(`GetObject of ${key} answered without a Node stream`)
      return Body
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
  }

  async remove(key: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#objectKey(key) }))
  }

  async *list(): AsyncIterable<{ key: string; writtenAt: number }> {
    const pages = paginateListObjectsV2(
      { client: this.#client },
      { Bucket: this.#bucket, Prefix: this.#listPrefix() },
    )
    for await (const page of pages) {
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || object.LastModified === undefined) continue
        yield { key: object.Key.slice(this.#listPrefix().length), writtenAt: object.LastModified.getTime() }
      }
    }
  }

  async removeUnfinished(before: number): Promise<number> {
    let removed = 0
    try {
      for await (const upload of this.#multipartUploads()) {
        if (!upload.Key || !upload.UploadId || !upload.Initiated) continue
        if (upload.Initiated.getTime() >= before) continue
        await this.#client.send(
          new AbortMultipartUploadCommand({
            Bucket: this.#bucket,
            Key: upload.Key,
            UploadId: upload.UploadId,
          }),
        )
        removed++
      }
    } catch (error) {
      // Some S3-compatible servers (s3rver among them) cannot list multipart uploads: there is nothing this
      // store can find to remove, and a bucket lifecycle rule (AbortIncompleteMultipartUpload) must do it.
      if (error instanceof S3ServiceException && error.name === 'NotImplemented') return removed
      throw error
    }
    return removed
  }

  /** The SDK has no paginator for ListMultipartUploads. */
  async *#multipartUploads(): AsyncIterable<MultipartUpload> {
    let markers: { KeyMarker?: string; UploadIdMarker?: string } = {}
    for (;;) {
      const page = await this.#client.send(
        new ListMultipartUploadsCommand({ Bucket: this.#bucket, Prefix: this.#listPrefix(), ...markers }),
      )
      yield* page.Uploads ?? []
      if (!page.IsTruncated) return
      markers = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker }
    }
  }

  #objectKey(key: string): string {
    if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/.test(key)) throw new Error(`not a media key: ${key}`)
    return this.#listPrefix() + key
  }

  #listPrefix(): string {
    return this.#prefix ? `${this.#prefix}/` : ''
  }
}

/**
 * The bucket store `earshot serve` uses: the endpoint, region and credentials come from the AWS SDK's
 * standard settings (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...); most
 * servers other than AWS want path-style addressing (EARSHOT_MEDIA_S3_FORCE_PATH_STYLE=1 in the config).
 */
export function bucketStoreFromEnvironment(bucket: string, forcePathStyle: boolean): BucketStore {
  const client = new S3Client({ forcePathStyle })
  return new BucketStore({ bucket, client })
}

/**
 * Why a put failed. When the body or the meter failed, the pipeline has that error; lib-storage got it too
 * but, having aborted the multipart upload, may answer with the abort's failure instead (a server that cannot
 * abort one). When the upload failed first, lib-storage stopped reading the meter, and Node ended the
 * pipeline with an AbortError of its own: the upload's error is the one that says why.
 */
function rootFailure(
  piped: PromiseSettledResult<unknown>,
  uploaded: PromiseSettledResult<unknown>,
): PromiseRejectedResult | undefined {
  if (piped.status === 'fulfilled') return uploaded.status === 'rejected' ? uploaded : undefined
  const stoppedReading = piped.reason instanceof Error && piped.reason.name === 'AbortError'
  return stoppedReading && uploaded.status === 'rejected' ? uploaded : piped
}

function isNotFound(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false
  // A missing bucket is a 404 too, and must not pass for a missing file.
  return (
    error.name === 'NoSuchKey' || (error.$metadata.httpStatusCode === 404 && error.name !== 'NoSuchBucket')
  )
}
