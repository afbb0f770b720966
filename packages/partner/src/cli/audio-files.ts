/** Where the CLI keeps recordings' audio: DIR/<audioId>.<extension of its Content-Type>. */
import { access, rm } from 'node:fs/promises'
import { join } from 'node:path'
import {
  type AudioDestination,
  audioLinkOf,
  type DownloadedAudio,
  type DownloadProgress,
  downloadFromLink,
} from '../client/audio-download.js'
import type { EarshotClient } from '../client/earshot-client.js'
import { syncDirectory } from '../client/partial-file.js'

const EXTENSIONS: Record<string, string> = {
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/webm': 'webm',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/amr': 'amr',
  'audio/3gpp': '3gp',
}

/** Every extension extensionOf() gives: the names the audio of a recording can have. */
const KNOWN_EXTENSIONS = [...new Set([...Object.values(EXTENSIONS), 'audio'])]

/** The file extension of a Content-Type; `audio` for a type not known. */
export function extensionOf(contentType: string): string {
  return EXTENSIONS[contentType] ?? 'audio'
}

/**
 * The audioId as a file name: no path separator, and no dot, so that `<name>.<extension>` belongs to one
 * audioId only.
 */
function fileNameOf(audioId: string): string {
  return encodeURIComponent(audioId).replaceAll('.', '%2E')
}

/** DIR/<audioId>.<extension>, downloaded through DIR/<audioId>.part. */
export function audioDestination(directory: string, audioId: string): AudioDestination {
  const stem = join(directory, fileNameOf(audioId))
  return { partPath: `${stem}.part`, finalPath: (contentType) => `${stem}.${extensionOf(contentType)}` }
}

/** The files the recording's audio may be in (it is in one at most). */
function audioFilesOf(directory: string, audioId: string): string[] {
  const stem = join(directory, fileNameOf(audioId))
  return KNOWN_EXTENSIONS.map((extension) => `${stem}.${extension}`)
}

/** The directory holds the recording's audio, complete (a partial download is not it). */
export async function hasAudioFile(directory: string, audioId: string): Promise<boolean> {
  const found = await Promise.all(
    audioFilesOf(directory, audioId).map((file) =>
      access(file).then(
        () => true,
        () => false,
      ),
    ),
  )
  return found.includes(true)
}

/** Removes the recording's audio from `directory`, a partial download included; all of it but `keep`. */
export async function removeAudioFiles(directory: string, audioId: string, keep?: string): Promise<void> {
  const { partPath } = audioDestination(directory, audioId)
  for (const file of [...audioFilesOf(directory, audioId), partPath, `${partPath}.etag`]) {
    if (file !== keep) await rm(file, { force: true })
  }
}

/** Removes all of the recording's audio, durably: a deleted recording's erasure is confirmed after it. */
export async function eraseAudioFiles(directory: string, audioId: string): Promise<void> {
  await removeAudioFiles(directory, audioId)
  await syncDirectory(directory)
}

/**
 * Downloads the recording's audio to `destination`: from `link` when given (a push's or the feed's, which
 * may have expired), else from a link the query gives now.
 */
export async function downloadAudioTo(
  client: EarshotClient,
  audioId: string,
  destination: AudioDestination,
  options: {
    link?: string | undefined
    signal?: AbortSignal
    onProgress?: (progress: DownloadProgress) => void
  },
): Promise<DownloadedAudio & { file: string }> {
  const { link, signal, onProgress } = options
  const freshLink = () => audioLinkOf(client, audioId, signal)
  return downloadFromLink(link, destination, { freshLink, signal, onProgress })
}

/** Downloads the recording's audio into DIR, replacing the audio kept there before (of another type too). */
export async function saveAudio(
  client: EarshotClient,
  directory: string,
  audioId: string,
  options: { link?: string | undefined; signal?: AbortSignal },
): Promise<DownloadedAudio & { file: string }> {
  const saved = await downloadAudioTo(client, audioId, audioDestination(directory, audioId), options)
  await removeAudioFiles(directory, audioId, saved.file)
  return saved
}
