import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { AudioRecordingData } from '@earshot/protocol'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import type { ChangeItem, ChangePage } from '../client/earshot-client.js'
import { EarshotConfigError } from '../client/errors.js'
import type { Database } from '../storage/database.js'
import { type ChangeMirror, openChangeMirror } from './change-mirror.js'

const data = (title: string): AudioRecordingData => ({
  deviceUid: 'DEV-1',
  title,
  recordedAt: '2026-03-01T09:00:00.000Z',
  denoiseUrl: 'https://media.example/a.mp3',
  recordDuration: 10,
})
let seq = 0
const item = (audioId: string, change: ChangeItem['change'], title?: string): ChangeItem => ({
  seq: ++seq,
  audioId,
  change,
  at: '2026-03-01T10:00:00Z',
  ...(title !== undefined && { data: data(title) }),
})
const page = (cursor: string, ...items: ChangeItem[]): ChangePage => ({
  specVersion: '1',
  items,
  nextCursor: cursor,
  hasMore: false,
  lagSeconds: 0,
})

describe('the change mirror', { timeout: 60_000 }, () => {
  let db: Database
  let mirror: ChangeMirror
  const titles = async () =>
    Object.fromEntries((await mirror.recordings()).map((r) => [r.audioId, r.data.title]))

  before(async () => {
    db = await emptyPglite()
    mirror = await openChangeMirror(db, 7)
  })
  after(async () => {
    await db?.close()
  })

  test('applies a page: upserts with the current data, deletes, skips what was deleted since', async () => {
    assert.equal(await mirror.cursor(), undefined)
    const first = page(
      'c1',
      item('a', 'created', 'A now'),
      item('b', 'created'), // deleted since: no data
      item('a', 'updated', 'A now'),
      item('b', 'deleted'),
      item('c', 'created'), // deleted since, its deletion on a later page
      item('d', 'created', 'D'),
    )
    assert.equal(await mirror.apply(first, undefined), true)
    assert.deepEqual(await titles(), { a: 'A now', d: 'D' })
    assert.equal(await mirror.cursor(), 'c1')

    assert.equal(await mirror.apply(page('c2', item('c', 'deleted'), item('d', 'deleted')), 'c1'), true)
    assert.deepEqual(await titles(), { a: 'A now' })
    const [state] = await db.query('SELECT enterprise_id, cursor, last_seq, applied FROM mirror_state')
    assert.deepEqual(state, { enterprise_id: 7, cursor: 'c2', last_seq: seq, applied: 8 })
  })

  test('a page read from a cursor no longer stored is not applied', async () => {
    const stale = page('c-stale', item('e', 'created', 'E'))
    assert.equal(await mirror.apply(stale, 'c1'), false)
    assert.equal(await mirror.cursor(), 'c2')
    assert.deepEqual(await titles(), { a: 'A now' })
  })

  test('an older change never overwrites a newer one', async () => {
    const newer = item('a', 'updated', 'A newest')
    const older = { ...item('a', 'updated', 'A older'), seq: newer.seq - 1 }
    assert.equal(await mirror.apply(page('c3', newer), 'c2'), true)
    assert.equal(await mirror.apply(page('c4', older), 'c3'), true)
    assert.deepEqual(await titles(), { a: 'A newest' })
  })

  test('a deletion in a page wins over every other change of its recording, one numbered after it too', async () => {
    assert.equal(await mirror.apply(page('c5', item('f', 'created', 'F')), 'c4'), true)
    assert.equal(await titles().then((all) => all.f), 'F')
    // The updating transaction began before the deleting one but wrote later: its seq comes after.
    const deletedFirst = page('c6', item('f', 'deleted'), item('f', 'updated'), item('g', 'created', 'G'))
    assert.equal(await mirror.apply(deletedFirst, 'c5'), true)
    assert.deepEqual(await titles(), { a: 'A newest', g: 'G' })
    // Even when the later change still carried data (read before the deletion committed).
    const withData = page('c7', item('g', 'deleted'), item('g', 'updated', 'G again'))
    assert.equal(await mirror.apply(withData, 'c6'), true)
    assert.deepEqual(await titles(), { a: 'A newest' })
  })

  test("another enterprise's mirror is refused", async () => {
    await assert.rejects(openChangeMirror(db, 8), (error: Error) => {
      assert.ok(error instanceof EarshotConfigError)
      assert.equal(error.message, 'this mirror holds the recordings of enterprise 7, not of enterprise 8')
      return true
    })
  })
})
