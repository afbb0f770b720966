/*
 * A download's part file: the bytes had so far beside the ETag they belong to (so a later call resumes),
 * hashed as they are appended, made durable, verified and renamed into place at the end.
 */
import { createHash, type Hash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { EarshotDigestMismatchError } from './errors.js'

export interface DownloadedAudio {
  bytes: number
  /** The SHA-256 of the file, lower-case hex. */
  sha256: string
  /** The link's Content-Type, without parameters. */
  contentType: string
  /** How many times the download went on from bytes already had (a 206), an earlier call's included. */
  resumed: number
  /** The SHA-256 was checked against the link's Repr-Digest; false for a link that states none. */
  verified: boolean
}

/** Where a download goes: the partial file, and the file it becomes once complete and verified. */
export interface AudioDestination {
  partPath: string
  finalPath(contentType: string): string
}

/** The state of one download across its attempts. */
export interface Transfer {
  link: string
  /** A 403 is answered by asking for a fresh link: once, and again only after bytes arrived. */
  mayRenewLink: boolean
  file: FileHandle
  partPath: string
  etagPath: string
  /** The validator of the bytes in the part file, kept beside it for a later call. */
  etag: string | undefined
  have: number
  /** The SHA-256 of the part file's `have` bytes. */
  hash: Hash
  total: number | undefined
  digest: Buffer | undefined
  contentType: string
  resumed: number
}

export async function openTransfer(link: string, partPath: string): Promise<Transfer> {
  const file = await open(partPath, 'a')
  const transfer: Transfer = {
    link,
    mayRenewLink: true,
    file,
    partPath,
    etagPath: `${partPath}.etag`,
    etag: undefined,
    have: 0,
    hash: createHash('sha256'),
    total: undefined,
    digest: undefined,
    contentType: 'application/octet-stream',
    resumed: 0,
  }
  try {
    const etag = (await readFile(transfer.etagPath, 'utf8').catch(() => '')).trim()
    const { size } = await file.stat()
    if (etag === '' || size === 0) {
      await restart(transfer)
    } else {
      transfer.etag = etag
      transfer.have = size
      for await (const chunk of createReadStream(partPath)) transfer.hash.update(chunk as Buffer)
    }
    return transfer
  } catch (error) {
    await file.close()
    throw error
  }
}

/** Forgets the bytes had: the next request asks for the whole file. */
export async function restart(transfer: Transfer): Promise<void> {
  transfer.have = 0
  transfer.hash = createHash('sha256')
  transfer.etag = undefined
  await transfer.file.truncate(0)
  await rm(transfer.etagPath, { force: true })
}

export async function removePartial(partPath: string): Promise<void> {
  await rm(partPath, { force: true })
  await rm(`${partPath}.etag`, { force: true })
}

export async function append(transfer: Transfer, chunk: Uint8Array): Promise<void> {
  for (let offset = 0; offset < chunk.byteLength; ) {
    offset += (await transfer.file.write(chunk, offset)).bytesWritten
  }
  transfer.hash.update(chunk)
  transfer.have += chunk.byteLength
  transfer.mayRenewLink = true
}

/** The part file made durable, verified and renamed into place. */
export async function finish(
  transfer: Transfer,
  destination: AudioDestination,
): Promise<DownloadedAudio & { file: string }> {
  try {
    await transfer.file.sync()
  } finally {
    await transfer.file.close()
  }
  const sha256 = transfer.hash.digest()
  if (transfer.digest !== undefined && !sha256.equals(transfer.digest)) {
    await removePartial(transfer.partPath)
    throw new EarshotDigestMismatchError(transfer.digest.toString('hex'), sha256.toString('hex'))
  }
  const file = destination.finalPath(transfer.contentType)
  await rename(transfer.partPath, file)
  await rm(transfer.etagPath, { force: true })
  await syncDirectory(dirname(file))
  return {
    file,
    bytes: transfer.have,
    sha256: sha256.toString('hex'),
    contentType: transfer.contentType,
    resumed: transfer.resumed,
    verified: transfer.digest !== undefined,
  }
}

/** Makes a rename or removal in the directory durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
