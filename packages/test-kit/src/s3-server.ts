import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import type S3rver from 's3rver'

export interface S3Server {
  /** http://127.0.0.1:PORT, for path-style requests. */
  endpoint: string
  /** An empty bucket made for this server. */
  bucket: string
  client: S3Client
  close(): Promise<void>
}

/**
 * A real S3-compatible server (s3rver, on a fresh temporary directory) on loopback, with an empty bucket;
 * undefined when it cannot start, and then `onUnavailable` is told why.
 */
export async function startS3Server(
  options: { onUnavailable?: (reason: string) => void } = {},
): Promise<S3Server | undefined> {
  const directory = await mkdtemp(join(tmpdir(), 'earshot-s3rver-'))
  let server: S3rver | undefined
  try {
    // Loaded here, not imported at the top: s3rver is a development dependency of the test kit only.
    const { default: S3rverClass } = await import('s3rver')
    server = new S3rverClass({ address: '127.0.0.1', port: 0, directory, silent: true })
    const { port } = await server.run()
    const endpoint = `http://127.0.0.1:${port}`
    const client = clientOf(endpoint)
    const bucket = 'earshot-media'
    await client.send(new CreateBucketCommand({ Bucket: bucket }))
    const running = server
    const close = async () => {
      client.destroy()
      await running.close()
      await rm(directory, { recursive: true, force: true })
    }
    return { endpoint, bucket, client, close }
  } catch (error) {
    await server?.close().catch(() => {})
    await rm(directory, { recursive: true, force: true })
    options.onUnavailable?.(error instanceof Error ? error.message : String(error))
    return undefined
  }
}

function clientOf(endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  })
}
