import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { ReceivedPush } from '../receiver/push-receiver.js'
import type { Database } from './database.js'

/** Where `earshot-partner listen` keeps what it receives: one entry per (audioId, eventType). */
export interface RecordingStore {
  /** Stores the push's recording; a later event of the same (audioId, eventType) replaces it. */
  save(push: ReceivedPush): Promise<void>
  describe(push: ReceivedPush): string
}

/** A `recordings` table beside the receiver's own tables. */
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
  return {
    async save(push) {
      // A push repeated (same eventId) changes nothing; a newer event of the same kind replaces the row.
      await db.query(
        `INSERT INTO recordings (audio_id, event_type, event_id, occurred_at, data, sentences)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (audio_id, event_type) DO UPDATE
           SET event_id = EXCLUDED.event_id, occurred_at = EXCLUDED.occurred_at, data = EXCLUDED.data,
               sentences = EXCLUDED.sentences, stored_at = now()
         WHERE recordings.event_id <> EXCLUDED.event_id AND recordings.occurred_at <= EXCLUDED.occurred_at`,
        [
          push.audioId,
          push.eventType,
          push.eventId,
          push.occurredAt,
          JSON.stringify(push.data),
          push.sentences === undefined ? null : JSON.stringify(push.sentences),
        ],
      )
    },
    describe: (push) => `the recordings table (${push.audioId}, ${push.eventType})`,
  }
}

/** One JSON file per (audioId, eventType) in `directory`, written to a temporary file and renamed. */
export function fileRecordingStore(directory: string): RecordingStore {
  mkdirSync(directory, { recursive: true })
  // The audioId comes from an authenticated push, but is still no path: '/' and the like are escaped.
  const fileOf = (push: ReceivedPush) =>
    join(directory, `${encodeURIComponent(push.audioId)}.${push.eventType}.json`)
  return {
    async save(push) {
      const target = fileOf(push)
      const temporary = join(directory, `.${randomBytes(8).toString('hex')}.tmp`)
      const { sentences, ...event } = push
      const content = `${JSON.stringify(sentences === undefined ? event : { ...event, sentences })}\n`
      try {
        const file = await open(temporary, 'wx', 0o644)
        try {
          await file.writeFile(content)
          await file.sync() // on disk before the answer says stored
        } finally {
          await file.close()
        }
        await rename(temporary, target)
      } catch (error) {
        await rm(temporary, { force: true })
        throw error
      }
      const dir = await open(directory, 'r')
      try {
        await dir.sync() // the rename itself
      } finally {
        await dir.close()
      }
    },
    describe: fileOf,
  }
}
