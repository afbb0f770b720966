import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { PushEventType, parseInstantMicros } from '@earshot/protocol'
import type { Database, Queryable } from '../storage/database.js'
import type { ReceivedDeletion, ReceivedPush } from './push-receiver.js'

/** Every eventType of a push carrying the recording (all but its deletion). */
const RECORDING_EVENT_TYPES = Object.values(PushEventType).filter((type) => type !== PushEventType.DELETED)

/**
 * Where `earshot-partner listen` keeps what it receives: one entry per (audioId, eventType). The entry of
 * `recording.updated` holds the recording as it was at its latest update.
 */
export interface RecordingStore {
  /**
   * Stores the push's recording; a later event of the same (audioId, eventType) replaces it. A push
   * that occurred before the recording's deletion was stored (a retry overtaken by it) is ignored:
   * false then, so that nothing of the recording (its audio) is fetched again.
   */
  save(push: ReceivedPush): Promise<boolean>
  /** Removes what was stored of the recording and keeps the deletion; one never stored is no error. */
  delete(deletion: ReceivedDeletion): Promise<void>
  describe(push: ReceivedPush | ReceivedDeletion): string
}

/** A `recordings` table beside the receiver's own tables, and `deleted_recordings` for deletions. */
export async function databaseRecordingStore(db: Database): Promise<RecordingStore> {
  await db.query(
    `CREATE TABLE IF NOT EXISTS recordings (
      audio_id text NOT NULL,
      event_type text NOT NULL,
      event_id text NOT NULL,
      occurred_at timestamptz NOT NULL,
      data jsonb NOT NULL,
      sentences jsonb,
      stored_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (audio_id, event_type)
    )`,
  )
  await db.query(
    `CREATE TABLE IF NOT EXISTS deleted_recordings (
      audio_id text PRIMARY KEY,
      event_id text NOT NULL,
      occurred_at timestamptz NOT NULL,
      deleted_at timestamptz NOT NULL DEFAULT now()
    )`,
  )
  // A push and the recording's deletion stored at once (receivers sharing a PostgreSQL) would each miss
  // the other's uncommitted row, and the recording would come back: one recording is written at a time,
  // and the statement runs after the lock, so it sees what the other committed.
  const oneAtATime = <T>(audioId: string, write: (tx: Queryable) => Promise<T>) =>
    db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [audioId])
      return write(tx)
    })
  return {
    async save(push) {
      // A push repeated (same eventId) changes nothing; a newer event of the same kind replaces the row.
      return oneAtATime(push.audioId, async (tx) => {
        const [outcome] = await tx.query<{ deleted: boolean }>(
          `WITH deletion AS (SELECT 1 FROM deleted_recordings WHERE audio_id = $1 AND occurred_at >= $4),
           stored AS (
             INSERT INTO recordings (audio_id, event_type, event_id, occurred_at, data, sentences)
             SELECT $1, $2, $3, $4::timestamptz, $5::jsonb, $6::jsonb WHERE NOT EXISTS (SELECT 1 FROM deletion)
             ON CONFLICT (audio_id, event_type) DO UPDATE
               SET event_id = EXCLUDED.event_id, occurred_at = EXCLUDED.occurred_at, data = EXCLUDED.data,
                   sentences = EXCLUDED.sentences, stored_at = now()
             WHERE recordings.event_id <> EXCLUDED.event_id AND recordings.occurred_at <= EXCLUDED.occurred_at
           )
           SELECT EXISTS (SELECT 1 FROM deletion) AS deleted`,
          [
            push.audioId,
            push.eventType,
            push.eventId,
            push.occurredAt,
            JSON.stringify(push.data),
            push.sentences === undefined ? null : JSON.stringify(push.sentences),
          ],
        )
        return outcome?.deleted !== true
      })
    },
    async delete(deletion) {
      await oneAtATime(deletion.audioId, (tx) =>
        tx.query(
          `WITH tombstone AS (
           INSERT INTO deleted_recordings (audio_id, event_id, occurred_at) VALUES ($1, $2, $3)
           ON CONFLICT (audio_id) DO UPDATE
             SET event_id = EXCLUDED.event_id, occurred_at = EXCLUDED.occurred_at, deleted_at = now()
           WHERE deleted_recordings.occurred_at < EXCLUDED.occurred_at
         )
         DELETE FROM recordings WHERE audio_id = $1 AND occurred_at <= $3`,
          [deletion.audioId, deletion.eventId, deletion.occurredAt],
        ),
      )
    },
    describe: (event) =>
      event.eventType === PushEventType.DELETED
        ? `the recordings table (${event.audioId})`
        : `the recordings table (${event.audioId}, ${event.eventType})`,
  }
}

/**
 * One JSON file per (audioId, eventType) in `directory`, written to a temporary file and renamed. A
 * deletion removes the recording's files and is kept as `<audioId>.recording.deleted.json`.
 */
export function fileRecordingStore(directory: string): RecordingStore {
  mkdirSync(directory, { recursive: true })
  // The audioId comes from an authenticated push, but is still no path: '/' and the like are escaped.
  const fileOf = (audioId: string, eventType: string) =>
    join(directory, `${encodeURIComponent(audioId)}.${eventType}.json`)
  /** When the event stored in `file` occurred; undefined when there is no such file. */
  const occurredAtOf = async (file: string): Promise<bigint | undefined> => {
    try {
      return parseInstantMicros((JSON.parse(await readFile(file, 'utf8')) as ReceivedPush).occurredAt)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }
  const syncDirectory = async () => {
    const dir = await open(directory, 'r')
    try {
      await dir.sync() // the rename or removal itself
    } finally {
      await dir.close()
    }
  }
  const write = async (target: string, event: object) => {
    const temporary = join(directory, `.${randomBytes(8).toString('hex')}.tmp`)
    try {
      const file = await open(temporary, 'wx', 0o644)
      try {
        await file.writeFile(`${JSON.stringify(event)}\n`)
        await file.sync() // on disk before the answer says stored
      } finally {
        await file.close()
      }
      await rename(temporary, target)
    } catch (error) {
      await rm(temporary, { force: true })
      throw error
    }
    await syncDirectory()
  }
  // A push checks for the deletion's file before it writes its own: a deletion handled in between (pushes
  // are handled concurrently) would miss that file and the recording would come back. One recording's
  // writes run one after another; the directory's lock keeps other processes out.
  const queues = new Map<string, Promise<unknown>>()
  const oneAtATime = <T>(audioId: string, work: () => Promise<T>): Promise<T> => {
    const next = (queues.get(audioId) ?? Promise.resolve()).catch(() => {}).then(work)
    queues.set(audioId, next)
    const forget = () => {
      if (queues.get(audioId) === next) queues.delete(audioId)
    }
    next.then(forget, forget)
    return next
  }
  return {
    save: (push) =>
      oneAtATime(push.audioId, async () => {
        const deletedAt = await occurredAtOf(fileOf(push.audioId, PushEventType.DELETED))
        const occurredAt = parseInstantMicros(push.occurredAt) as bigint
        if (deletedAt !== undefined && deletedAt >= occurredAt) return false
        const target = fileOf(push.audioId, push.eventType)
        // Updates of one recording may arrive out of order (a retry overtaken by a later one): the latest stays.
        const storedAt = await occurredAtOf(target)
        if (storedAt !== undefined && storedAt > occurredAt) return true
        const { sentences, ...event } = push
        await write(target, sentences === undefined ? event : push)
        return true
      }),
    delete: (deletion) => oneAtATime(deletion.audioId, () => removeRecording(deletion)),
    describe: (event) => fileOf(event.audioId, event.eventType),
  }

  async function removeRecording(deletion: ReceivedDeletion): Promise<void> {
    await write(fileOf(deletion.audioId, deletion.eventType), deletion)
    const deletedAt = parseInstantMicros(deletion.occurredAt) as bigint
    for (const eventType of RECORDING_EVENT_TYPES) {
      const file = fileOf(deletion.audioId, eventType)
      const occurredAt = await occurredAtOf(file)
      if (occurredAt !== undefined && occurredAt <= deletedAt) await rm(file, { force: true })
    }
    await syncDirectory()
  }
}
