import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import type { Database } from '../storage/database.js'
import type { ReceivedDeletion, ReceivedPush } from './push-receiver.js'
import { databaseRecordingStore, fileRecordingStore, type RecordingStore } from './recording-store.js'

const push = (audioId: string, occurredAt: string, title = 'a title'): ReceivedPush => ({
  eventId: `evt-${audioId}-${occurredAt}`,
  eventType: 'recording.audio_ready',
  audioId,
  occurredAt,
  data: {
    deviceUid: 'DEV-1',
    title,
    recordedAt: '2026-03-01T09:00:00.000Z',
    denoiseUrl: 'https://media.example/a.mp3',
    recordDuration: 5,
  },
  sentences: undefined,
})
const update = (audioId: string, occurredAt: string, title: string): ReceivedPush => ({
  ...push(audioId, occurredAt, title),
  eventId: `evt-${audioId}-updated-${occurredAt}`,
  eventType: 'recording.updated',
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
    db = await emptyPglite()
    dir = await mkdtemp(join(tmpdir(), 'earshot-store-'))
  })
  after(async () => {
    await db?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  /**
   * recording.updated on a store: an upsert of its own entry, the latest update wins, and a deletion removes
   * it like the other events (a late update older than the deletion does not bring the recording back).
   * `updates` lists the titles of the stored updates by audioId.
   */
  async function updateStory(store: RecordingStore, updates: () => Promise<[string, string][]>) {
    await store.save(push('u', '2026-03-01T10:00:00Z'))
    await store.save(update('u', '2026-03-01T11:00:00Z', 'first update'))
    await store.save(update('u', '2026-03-01T12:00:00Z', 'second update'))
    await store.save(update('u', '2026-03-01T11:30:00Z', 'an older update, late'))
    assert.deepEqual(await updates(), [['u', 'second update']])
    await store.delete(deletion('u', '2026-03-02T10:00:00Z'))
    assert.deepEqual(await updates(), [])
    await store.save(update('u', '2026-03-01T13:00:00Z', 'before the deletion, late'))
    assert.deepEqual(await updates(), [])
  }

  /** Runs the same story on a store; `held` lists the audioIds it holds a recording of. */
  async function story(store: RecordingStore, held: () => Promise<string[]>) {
    assert.equal(await store.save(push('a', '2026-03-01T10:00:00Z')), true)
    await store.save(push('b', '2026-03-01T10:00:00Z'))
    assert.deepEqual(await held(), ['a', 'b'])
    await store.delete(deletion('a', '2026-03-02T10:00:00Z'))
    await store.delete(deletion('a', '2026-03-02T10:00:00Z'))
    await store.delete(deletion('never-stored', '2026-03-02T10:00:00Z'))
    assert.deepEqual(await held(), ['b'])
    // A retry of a push older than the deletion, arriving after it, does not bring the recording back.
    assert.equal(await store.save(push('a', '2026-03-01T10:00:00Z', 'late retry')), false)
    assert.deepEqual(await held(), ['b'])
    // A recording of that audioId made after the deletion is stored.
    assert.equal(await store.save(push('a', '2026-03-03T10:00:00Z', 'made again')), true)
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
    await updateStory(store, async () =>
      (
        await db.query<{ audio_id: string; title: string }>(
          `SELECT audio_id, data->>'title' AS title FROM recordings WHERE event_type = 'recording.updated'`,
        )
      ).map((row) => [row.audio_id, row.title]),
    )
    const [rows] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM recordings WHERE audio_id = 'u'`,
    )
    assert.equal(rows?.n, 0, 'the deletion removed every event of the recording')
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
    const updateFile = join(directory, 'u.recording.updated.json')
    await updateStory(store, async () => {
      const names = await readdir(directory)
      if (!names.includes('u.recording.updated.json')) return []
      return [['u', JSON.parse(await readFile(updateFile, 'utf8')).data.title]]
    })
    assert.deepEqual(
      (await readdir(directory)).filter((name) => name.startsWith('u.')),
      ['u.recording.deleted.json'],
      'the deletion removed every event of the recording',
    )
  })
})
