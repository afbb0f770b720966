import { createHash } from 'node:crypto'
import { InvalidParameterError } from '@earshot/protocol'
import { platformAudioId, type RecordingInput } from '../recordings/recording-input.js'
import type { Queryable } from '../storage/database.js'

/** A line of the file, numbered from 1, as validated (its audioId, if it gave one). */
export interface NumberedInput {
  line: number
  input: RecordingInput
}

/**
 * The audioIds of one JSON Lines file, each used by one line only. They are kept in temporary tables of the
 * import's database session, a chunk of lines at a time, so that an import's memory does not grow with the
 * file. A line without an audioId gets one derived from the enterprise and the line's content, so that
 * importing the same file again finds the recordings it stored the first time instead of adding copies. The
 * content is every field but the transcript (a line that later gains a transcript keeps its audioId, so the
 * transcript is attached) plus how many earlier lines had the same content (identical lines stay distinct
 * recordings).
 */
export class ImportAudioIds {
  private constructor(
    private readonly db: Queryable,
    private readonly enterpriseId: number,
    private readonly slot: number,
  ) {}

  /** Imports in this process hold a slot each: the tables' names, so a connection's statements stay few. */
  private static readonly slots = new Set<number>()

  /** Creates the session's tables; close() drops them. */
  static async create(db: Queryable, enterpriseId: number): Promise<ImportAudioIds> {
    let slot = 0
    while (ImportAudioIds.slots.has(slot)) slot++
    ImportAudioIds.slots.add(slot)
    const ids = new ImportAudioIds(db, enterpriseId, slot)
    try {
      await db.query(`CREATE TEMPORARY TABLE ${ids.lines} (audio_id text PRIMARY KEY, line integer NOT NULL)`)
      await db.query(
        `CREATE TEMPORARY TABLE ${ids.contents} (content bytea PRIMARY KEY, seen integer NOT NULL)`,
      )
    } catch (error) {
      await ids.close()
      throw error
    }
    return ids
  }

  private get lines(): string {
    return `earshot_import_audio_ids_${this.slot}`
  }

  private get contents(): string {
    return `earshot_import_contents_${this.slot}`
  }

  /**
   * The audioIds of the next lines of the file, in order, each line's audioId or, for a line repeating the
   * audioId of an earlier one, the InvalidParameterError naming that line.
   */
  async assign(chunk: readonly NumberedInput[]): Promise<(string | InvalidParameterError)[]> {
    const derived = await this.derivedIds(chunk)
    const wanted = chunk.map(({ input }, i) => input.audioId ?? (derived[i] as string))
    const firstLine = new Map<string, number>()
    const repeats = chunk.map(({ line }, i) => {
      const audioId = wanted[i] as string
      const first = firstLine.get(audioId)
      if (first === undefined) firstLine.set(audioId, line)
      return first
    })
    // The SELECT sees the table as it was before this statement: the earlier chunks' audioIds.
    const earlier = await this.db.query<{ audio_id: string; line: number }>(
      `WITH added AS (
         INSERT INTO ${this.lines} (audio_id, line) SELECT * FROM unnest($1::text[], $2::int[])
         ON CONFLICT (audio_id) DO NOTHING)
       SELECT audio_id, line FROM ${this.lines} WHERE audio_id = ANY($1::text[])`,
      [[...firstLine.keys()], [...firstLine.values()]],
    )
    const before = new Map(earlier.map((row) => [row.audio_id, row.line]))
    return wanted.map((audioId, i) => {
      const seen = before.get(audioId) ?? repeats[i]
      return seen === undefined
        ? audioId
        : new InvalidParameterError('audioId', `repeats the audioId of line ${seen}`)
    })
  }

  /** For the lines without an audioId, theirs: their content's digest and occurrence in the file so far. */
  private async derivedIds(chunk: readonly NumberedInput[]): Promise<(string | undefined)[]> {
    const contents = chunk.map(({ input }) => {
      if (input.audioId !== undefined) return undefined
      const content = this.content(input)
      return { content, digest: createHash('sha256').update(content).digest('hex') }
    })
    const digests = [...new Set(contents.flatMap((each) => (each ? [each.digest] : [])))]
    if (digests.length === 0) return contents.map(() => undefined)
    const rows = await this.db.query<{ digest: string; seen: number }>(
      `SELECT encode(content, 'hex') AS digest, seen FROM ${this.contents}
        WHERE content IN (SELECT decode(d, 'hex') FROM unnest($1::text[]) AS d)`,
      [digests],
    )
    const seen = new Map(rows.map((row) => [row.digest, row.seen]))
    const ids = contents.map((each) => {
      if (!each) return undefined
      const occurrence = seen.get(each.digest) ?? 0
      seen.set(each.digest, occurrence + 1)
      return platformAudioId(createHash('sha256').update(`${occurrence}\n${each.content}`).digest())
    })
    await this.db.query(
      `INSERT INTO ${this.contents} (content, seen)
       SELECT decode(d, 'hex'), s FROM unnest($1::text[], $2::int[]) AS x(d, s)
       ON CONFLICT (content) DO UPDATE SET seen = EXCLUDED.seen`,
      [digests, digests.map((digest) => seen.get(digest))],
    )
    return ids
  }

  private content(input: RecordingInput): string {
    return JSON.stringify([
      this.enterpriseId,
      input.deviceUid,
      input.title,
      input.recordedAt,
      input.denoiseUrl ?? null,
      input.recordDuration ?? null,
    ])
  }

  /** Drops the tables (on PostgreSQL they would go with the session's connection anyway). */
  async close(): Promise<void> {
    try {
      await this.db.query(`DROP TABLE IF EXISTS ${this.lines}, ${this.contents}`)
    } finally {
      ImportAudioIds.slots.delete(this.slot)
    }
  }
}
