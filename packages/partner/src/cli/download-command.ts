import { stat } from 'node:fs/promises'
import { join, resolve, sep } from 'node:path'
import { Command } from 'commander'
import type { AudioDestination, DownloadProgress } from '../client/audio-download.js'
import { audioDestination, downloadAudioTo } from './audio-files.js'
import { makeFolderFor, printJson, printLines, progressBar, runWithClient } from './command-support.js'

interface DownloadOptions {
  out?: string
  progress?: boolean
  json?: boolean
}

/**
 * `earshot-partner download AUDIO_ID [--out FILE] [--json]`: the recording's audio, verified against the
 * digest its link states. An interrupted download leaves FILE.part, which the next run resumes.
 */
export function downloadCommand(): Command {
  return new Command('download')
    .description("download a recording's audio, verified; run it again to resume one that was cut off")
    .argument('<audioId>', 'the recording')
    .option(
      '--out <file>',
      'the file to write, its folder made if missing; a folder (ending in /, or one that exists) gets ' +
        '<audioId>.<extension> in it (default ./<audioId>.<extension of its Content-Type, or audio>)',
    )
    .option('--progress', 'show a progress bar on stderr even when it is not a terminal')
    .option('--json', 'print {"audioId", "file", "bytes", "sha256"} as JSON')
    .action(async (audioId: string, options: DownloadOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, async (client) => {
        const bar = options.progress || process.stderr.isTTY ? await downloadBar() : undefined
        let downloaded: Awaited<ReturnType<typeof downloadAudioTo>>
        try {
          const destination = await destinationOf(audioId, options)
          downloaded = await downloadAudioTo(client, audioId, destination, {
            onProgress: bar?.update,
          })
        } finally {
          bar?.stop()
        }
        const { file, bytes, sha256, verified } = downloaded
        if (options.json) return printJson({ audioId, file: resolve(file), bytes, sha256 })
        const check = verified ? 'verified' : 'not verified: the link states no digest'
        printLines(`Downloaded ${bytes} bytes to ${file} (SHA-256 ${sha256}, ${check}).`)
      })
    })
}

/** Where --out says, its folder made first (mkdir -p), or refused in one line. */
async function destinationOf(audioId: string, { out }: DownloadOptions): Promise<AudioDestination> {
  if (!out) return audioDestination('.', audioId)
  if (out.endsWith(sep) || out.endsWith('/') || (await isFolder(out))) {
    await makeFolderFor(join(out, audioId), '--out')
    return audioDestination(out, audioId)
  }
  await makeFolderFor(out, '--out')
  return { partPath: `${out}.part`, finalPath: () => out }
}

async function isFolder(path: string): Promise<boolean> {
  return stat(path).then(
    (found) => found.isDirectory(),
    () => false,
  )
}

/** A bar on stderr, started once the size of the file is known. */
async function downloadBar() {
  const bar = await progressBar({
    format: 'downloading [{bar}] {percentage}% | {value}/{total} bytes',
    noTTYOutput: true,
  })
  let started = false
  return {
    update({ bytes, total }: DownloadProgress) {
      if (total === undefined) return
      if (!started) {
        bar.start(total, bytes)
        started = true
        return
      }
      // A file changed since its part was downloaded starts over, at its own size.
      bar.setTotal(total)
      bar.update(bytes)
    },
    stop() {
      if (started) bar.stop()
    },
  }
}
