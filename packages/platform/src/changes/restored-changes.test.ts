import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ChangePage } from '@earshot/protocol'
import {
  durablePlatforms,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { createPartner, expectCode, ingest, partnerFor } from '@earshot/test-kit/calls'
import pg from 'pg'
import { openDatabase } from '../storage/open-database.js'
import { adoptRestoredChanges } from './restored-changes.js'

/**
 * A database restored on another server brings changes still queued under the first server's transaction
 * ids, which this server may not reach for a long time: the platform makes them ready when it starts.
 */

const CHANGES = '/openapi/v1/audios/changes'

/** Moves every queued change's transaction id a million past what the server has given. */
const FROM_ANOTHER_SERVER = `UPDATE recording_change_queue
    SET txid = (pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 1000000)::text::xid8`

const recording = (audioId: string) => ({
  audioId,
  deviceUid: 'DEV-MOVED',
  title: audioId,
  recordedAt: '2026-11-02T10:00:00Z',
  denoiseUrl: `https://cdn.example/${audioId}.mp3`,
  recordDuration: 1000,
})

for (const backend of testBackends) {
  describe(`changes restored from another server (${backend})`, { timeout: 120_000 }, () => {
    const durable = durablePlatforms(backend)

    test('are in the feed, in the order they were made, once the platform starts', async () => {
      const first = await durable.start({ pushDispatch: false })
      const partner = await createPartner(first, 'Moved')
      for (const audioId of ['moved-1', 'moved-2', 'moved-3'])
        await ingest(first, partner.enterpriseId, recording(audioId))
      await first.stop()

      const db = await openDatabase(durable.overrides)
      try {
        assert.equal((await db.query(`${FROM_ANOTHER_SERVER} RETURNING 1`)).length, 3)
      } finally {
        await db.close()
      }

      const restored = await durable.start({ pushDispatch: false })
      const reply = await partnerFor(restored, partner).call(CHANGES, {})
      expectCode(reply, 2000)
      const page = ChangePage.parse(reply.plaintext)
      assert.deepEqual(
        page.items.map(({ audioId, change }) => `${change} ${audioId}`),
        ['created moved-1', 'created moved-2', 'created moved-3'],
      )
      assert.equal(page.lagSeconds, 0)
    })
  })
}

describe('changes of transactions running here keep their place (postgres)', {
  timeout: 120_000,
  skip: !testBackends.includes('postgres') && 'DATABASE_URL is not set',
}, () => {
  let platform: TestPlatform
  let client: pg.Client

  before(async () => {
    platform = await startTestPlatform('postgres', { pushDispatch: false })
    client = new pg.Client({ connectionString: platform.context.config.databaseUrl })
    await client.connect()
  })
  after(async () => {
    await client?.end()
    await platform?.stop()
  })

  test('only when a change carries an id the server has not reached', async () => {
    const { db } = platform.context
    const txidOf = async (audioId: string) =>
      (
        await db.query<{ txid: string }>(
          'SELECT txid::text AS txid FROM recording_change_queue WHERE audio_id = $1',
          [audioId],
        )
      )[0]?.txid
    const partner = await createPartner(platform, 'Running')
    await ingest(platform, partner.enterpriseId, recording('made-here'))
    const madeHere = await txidOf('made-here')
    assert.equal(await adoptRestoredChanges(db), 0, 'nothing came from another server')
    assert.equal(await txidOf('made-here'), madeHere, 'a change made here keeps its transaction id')

    // A transaction still running holds back the changes committed after it began.
    await client.query('BEGIN')
    await client.query('SELECT pg_current_xact_id()')
    await ingest(platform, partner.enterpriseId, recording('made-later'))
    const madeLater = await txidOf('made-later')
    await db.query(`${FROM_ANOTHER_SERVER} WHERE audio_id = 'made-here'`)

    const adopted = await adoptRestoredChanges(db)
    await client.query('COMMIT')
    assert.equal(adopted, 1)
    assert.equal(await txidOf('made-here'), '1', 'the change from another server is ready')
    assert.equal(await txidOf('made-later'), madeLater, 'the change held back here keeps its place')
  })
})
