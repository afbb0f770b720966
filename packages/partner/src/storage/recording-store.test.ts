import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { ReceivedDeletion, ReceivedPush } from '../receiver/push-receiver.js'
import { type Database, openDatabase } from './database.js'
import { databaseRecordingStore, fileRecordingStore, type RecordingStore } from './recording-store.js'

const push = (audioId: string, occurredAt: string, title = 'a title'): ReceivedPush => ({
  eventId: `evt-${audioId}-${occurredAt}`,
  eventType: 'recording.audio_ready',
  audioId,
  occurredAt,
  data: { deviceUid: 'DEV-1', title, denoiseUrl: 'https://media.example/a.mp3', recordDuration: 5 },
  sentences: undefined,
})
const deletion = (audioId: string, occurredAt: string): ReceivedDeletion => ({
  eventId: `evt-${audioId}-deleted`,
  eventType: 'recording.deleted',
  audioId,
  occurredAt,
  data: {},
})

describe('recording stores and deletions', { timeout: 60_000 }, () => {
  let db: Database
  let dir: string

  before(async () => {
    db = await openDatabase({})
    dir = await mkdtemp(join(tmpdir(), 'earshot-store-'))
  })
  after(async () => {
    await db?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  /** Runs the same story on a store; `held` lists the audioIds it holds a recording of. */
  async function story(store: RecordingStore, held: () => Promise<string[]>) {
    await store.save(push('a', '2026-03-01T10:00:00Z'))
    await store.save(push('b', '2026-03-01T10:00:00Z'))
    assert.deepEqual(await held(), ['a', 'b'])
    await store.delete(deletion('a', '2026-03-02T10:00:00Z'))
    await store.delete(deletion('a', '2026-03-02T10:00:00Z'))
    await store.delete(deletion('never-stored', '2026-03-02T10:00:00Z'))
    assert.deepEqual(await held(), ['b'])
    // A retry of a push older than the deletion, arriving after it, does not bring the recording back.
    await store.save(push('a', '2026-03-01T10:00:00Z', 'late retry'))
    assert.deepEqual(await held(), ['b'])
    // A recording of that audioId made after the deletion is stored.
    await store.save(push('a', '2026-03-03T10:00:00Z', 'made again'))
    assert.deepEqual(await held(), ['a', 'b'])
  }

  test('the database store removes a deleted recording and keeps its tombstone', async () => {
    const store = await databaseRecordingStore(db)
    await story(store, async () =>
      (await db.query<{ audio_id: string }>('SELECT DISTINCT audio_id FROM recordings ORDER BY 1')).map(
        (row) => row.audio_id,
      ),
    )
    const [tombstone] = await db.query<{ audio_id: string }>('SELECT audio_id FROM deleted_recordings')
    assert.ok(tombstone)
    assert.equal(store.describe(deletion('a', '2026-03-02T10:00:00Z')), 'the recordings table (a)')
  })

  test('the file store removes the files and keeps the deletion as <audioId>.recording.deleted.json', async () => {
    const directory = join(dir, 'recordings')
    const store = fileRecordingStore(directory)
    const audioFiles = async () =>
      (await readdir(directory))
        .filter((name) => name.endsWith('.recording.audio_ready.json'))
        .map((name) => name.split('.')[0] as string)
        .sort()
    await story(store, audioFiles)
    const kept = JSON.parse(await readFile(join(directory, 'never-stored.recording.deleted.json'), 'utf8'))
    assert.deepEqual(kept, deletion('never-stored', '2026-03-02T10:00:00Z'))
    assert.deepEqual(
      (await readdir(directory)).filter((name) => name.startsWith('.')),
      [],
      'no temporary file left',
    )
  })
})
