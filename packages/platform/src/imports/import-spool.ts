import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NewRecording } from '../recordings/recording-store.js'
import { splitLines } from './body-lines.js'

/** A validated line of an import: its line number in the file and the recording it holds. */
export interface SpooledRecording {
  line: number
  recording: NewRecording
  /** About how many bytes the line takes, to keep chunks of long lines small (not spooled). */
  size: number
}

/** Bytes gathered before one write, and read at once. */
const BLOCK_BYTES = 1024 * 1024

/**
 * The validated recordings of one import (one JSON array per line), kept on disk between the
 * validation pass and the commit pass so that neither holds the file in memory. The file is
 * created in the system temporary directory, readable by this process only, and its name is
 * removed at once: only the open handle reaches it, so nothing is left behind whatever happens,
 * a killed process included. close() frees it.
 */
export class ImportSpool {
  private constructor(
    private readonly file: FileHandle,
    /** Set where a file cannot be removed while open (Windows): removed by close() instead. */
    private readonly directory: string | undefined,
  ) {}

  static async create(): Promise<ImportSpool> {
    const directory = await mkdtemp(join(tmpdir(), 'earshot-import-'))
    const file = await open(join(directory, 'recordings.jsonl'), 'wx+', 0o600).catch(async (error) => {
      await rm(directory, { recursive: true, force: true })
      throw error
    })
    const removed = await rm(directory, { recursive: true }).then(
      () => true,
      () => false,
    )
    return new ImportSpool(file, removed ? undefined : directory)
  }

  /** Writes the entries as they come, at the pace the disk takes them; call it once. */
  async fill(entries: AsyncIterable<SpooledRecording>): Promise<void> {
    let block: Buffer[] = []
    let size = 0
    const flush = async () => {
      await this.file.write(Buffer.concat(block, size))
      block = []
      size = 0
    }
    for await (const { line, recording } of entries) {
      const bytes = Buffer.from(`${JSON.stringify([line, recording])}\n`)
      block.push(bytes)
      size += bytes.length
      if (size >= BLOCK_BYTES) await flush()
    }
    if (size > 0) await flush()
  }

  async *entries(): AsyncGenerator<SpooledRecording, void, undefined> {
    // Written by fill(): every line is whole JSON, so no line limit applies.
    for await (const { bytes } of splitLines(this.blocks(), Number.POSITIVE_INFINITY)) {
      const text = (bytes as Buffer).toString('utf8')
      const [line, recording] = JSON.parse(text) as [number, NewRecording]
      yield { line, recording, size: text.length }
    }
  }

  private async *blocks(): AsyncGenerator<Buffer, void, undefined> {
    for (let position = 0; ; ) {
      const { bytesRead, buffer } = await this.file.read(Buffer.alloc(BLOCK_BYTES), 0, BLOCK_BYTES, position)
      if (bytesRead === 0) return
      position += bytesRead
      yield buffer.subarray(0, bytesRead)
    }
  }

  async close(): Promise<void> {
    await this.file.close()
    if (this.directory) await rm(this.directory, { recursive: true, force: true })
  }
}
