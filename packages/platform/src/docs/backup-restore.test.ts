import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { RecordingList } from '@earshot/protocol'
import {
  type ScratchDatabase,
  scratchPostgresDatabase,
  startTestPlatform,
  type TestPlatform,
  testBackends,
} from '@earshot/test-kit/backends'
import { createPartner, partnerFor, type TestPartner } from '@earshot/test-kit/calls'
import { everyChangeNumbered } from '@earshot/test-kit/change-feed'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import {
  type PostgresCluster,
  postgresBinDir,
  startPostgresCluster,
} from '@earshot/test-kit/postgres-cluster'
import pg from 'pg'
import type { PlatformConfig } from '../config/config.js'
import { markedBlock, markedNames, readDocument, runProcedure } from './markdown.test.support.js'

/**
 * The operator guide's backup and restore procedures, run exactly as written (the shell blocks marked
 * `<!-- procedure: … -->` in docs/operator-guide.md): a recording and its stored audio survive a backup
 * and a restore, on PGlite and on PostgreSQL, and on PostgreSQL also a restore on another server, whose
 * transaction ids are behind the first one's.
 */

const guide = readDocument('docs/operator-guide.md')
const procedure = (name: string) => markedBlock(guide, 'procedure', name).text

const AUDIO_ID = 'aud_backup_0001'
const AUDIO = randomBytes(48 * 1024)

/** A recording with its transcript, then its audio stored by Earshot (in the media directory or bucket). */
async function ingestWithAudio(platform: TestPlatform, partner: TestPartner): Promise<void> {
  const admin = adminClientOf(platform)
  await admin.call('ingestRecording', {
    params: { enterpriseId: partner.enterpriseId },
    body: {
      audioId: AUDIO_ID,
      deviceUid: 'DEV-BACKUP',
      title: 'Kept safe',
      recordedAt: '2026-11-02T09:00:00Z',
      transcript: { transcriptId: 1, transcriptText: 'Kept.', sentences: [], durationMs: 900, wordsCount: 1 },
    },
  })
  await admin.uploadAudio(partner.enterpriseId, AUDIO_ID, AUDIO, { contentType: 'audio/wav' })
}

/** The partner finds the recording, and its stored audio link serves the bytes uploaded. */
async function assertRecordingAndAudio(partner: TestPartner): Promise<void> {
  const reply = await partner.call('/openapi/v1/audios', { audioId: AUDIO_ID })
  assert.equal(reply.body.code, 2000, JSON.stringify(reply.body))
  const list = RecordingList.parse(reply.plaintext)
  assert.equal(list.total, 1, 'the query finds the recording')
  const data = list.items[0]?.data as { title: string; denoiseUrl?: string }
  assert.equal(data.title, 'Kept safe')
  assert.match(data.denoiseUrl ?? '', /\/media\/v1\//)
  const response = await fetch(data.denoiseUrl as string)
  assert.equal(response.status, 200, 'the stored audio came back with the database')
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), AUDIO)
}

const TESTED = ['pglite-backup', 'pglite-restore', 'postgres-backup', 'postgres-restore']

test('every procedure of the guide is one these tests run', { timeout: 5_000 }, () => {
  assert.deepEqual(markedNames(guide, 'procedure'), TESTED)
})

async function run(name: string, variables: Record<string, string>, path?: string): Promise<void> {
  const result = await runProcedure(procedure(name), variables, path)
  assert.equal(result.code, 0, `procedure ${name} failed:\n${result.stderr}${result.stdout}`)
}

describe('backup and restore of the embedded database (PGlite), as the guide says', {
  timeout: 120_000,
}, () => {
  let directory: string
  let platform: TestPlatform | undefined

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'earshot-backup-'))
  })
  after(async () => {
    await platform?.stop()
    await rm(directory, { recursive: true, force: true })
  })

  test('stop, copy the data directory, restore the copy, start: the recording and its audio are back', async () => {
    const dataDir = join(directory, 'data')
    const variables = { EARSHOT_DATA_DIR: dataDir, BACKUP: join(directory, 'backup') }
    const settings: Partial<PlatformConfig> = { dataDir, pushDispatch: false }

    platform = await startTestPlatform('pglite', settings)
    const partner = await createPartner(platform, 'Backed up')
    await ingestWithAudio(platform, partner)
    assert.ok(existsSync(`${dataDir}.lock`), 'a running platform holds <data dir>.lock')
    assert.ok(readdirSync(join(dataDir, 'media')).length > 0, 'stored audio is inside the data directory')
    await platform.stop()
    platform = undefined
    assert.ok(!existsSync(`${dataDir}.lock`), 'a clean stop removes the lock')

    await run('pglite-backup', variables)

    // Afterwards the recording is deleted: the restore must bring it back.
    platform = await startTestPlatform('pglite', settings)
    await adminClientOf(platform).deleteRecording(partner.enterpriseId, AUDIO_ID)
    const gone = await partnerFor(platform, partner).call('/openapi/v1/audios', { audioId: AUDIO_ID })
    assert.equal((gone.plaintext as { total: number }).total, 0)
    await platform.stop()
    platform = undefined

    await run('pglite-restore', variables)

    platform = await startTestPlatform('pglite', settings)
    await assertRecordingAndAudio(partnerFor(platform, partner))
    assert.ok(
      readdirSync(directory).some((name) => name.startsWith('data.before-restore-')),
      'the directory replaced is kept aside',
    )
  })
})

/** The PostgreSQL client tools' directory: the newest /usr/lib/postgresql/<version>/bin, or PATH's. */
function postgresClientPath(): string | undefined {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, 'bin', 'pg_dump')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  const path = [...versions.map((version) => join(root, version, 'bin')), process.env.PATH ?? ''].join(
    delimiter,
  )
  try {
    for (const tool of ['pg_dump', 'pg_restore', 'psql']) {
      execFileSync('sh', ['-c', `command -v ${tool}`], { env: { PATH: path }, stdio: 'ignore' })
    }
    return path
  } catch {
    return undefined
  }
}

const clientPath = testBackends.includes('postgres') ? postgresClientPath() : undefined
const postgresMissing = !testBackends.includes('postgres')
  ? 'DATABASE_URL is not set: no PostgreSQL server to back up'
  : !clientPath && 'pg_dump, pg_restore or psql not found in /usr/lib/postgresql/*/bin or on PATH'

describe('backup and restore on PostgreSQL, as the guide says', {
  skip: postgresMissing,
  timeout: 180_000,
}, () => {
  let directory: string
  const cleanUp: (() => Promise<unknown>)[] = []

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'earshot-pg-backup-'))
  })
  after(async () => {
    for (const step of cleanUp.reverse()) await step().catch(() => {})
    await rm(directory, { recursive: true, force: true })
  })

  /** A platform on a scratch database of its own, with its media directory; stopping it drops the database. */
  async function source(name: string) {
    const mediaDir = join(directory, name, 'media')
    const platform = await startTestPlatform('postgres', { mediaDir, pushDispatch: false })
    cleanUp.push(() => platform.stop())
    const partner = await createPartner(platform, `Backed up ${name}`)
    return { platform, partner, mediaDir, url: platform.context.config.databaseUrl as string }
  }

  test('pg_dump while it runs, copy the media; restore both into a new database: all is back', async () => {
    const { platform, partner, mediaDir, url } = await source('same-server')
    await ingestWithAudio(platform, partner)
    const backup = join(directory, 'same-server', 'backup')
    await run(
      'postgres-backup',
      { DATABASE_URL: url, BACKUP: backup, EARSHOT_MEDIA_DIR: mediaDir },
      clientPath,
    )
    await platform.stop()

    const target: ScratchDatabase = await scratchPostgresDatabase()
    cleanUp.push(() => target.drop())
    const restoredMedia = join(directory, 'same-server', 'restored-media')
    await run(
      'postgres-restore',
      { RESTORE_URL: target.url, BACKUP: backup, EARSHOT_MEDIA_DIR: restoredMedia },
      clientPath,
    )

    const restored = await startTestPlatform('postgres', {
      databaseUrl: target.url,
      mediaDir: restoredMedia,
      pushDispatch: false,
    })
    cleanUp.push(() => restored.stop())
    const again = partnerFor(restored, partner)
    await assertRecordingAndAudio(again)
    await everyChangeNumbered(restored, partner.enterpriseId)
    const feed = await again.call('/openapi/v1/audios/changes', {})
    const changes = (feed.plaintext as { items: { audioId: string; change: string }[] }).items
    assert.ok(changes.some((item) => item.audioId === AUDIO_ID && item.change === 'created'))
  })

  const clusterMissing = !postgresBinDir() && 'no PostgreSQL server binaries (initdb) to start another server'

  test('restored on another server, the changes queued at the dump reach the feed', {
    skip: clusterMissing,
  }, async () => {
    // A database of the test's own, kept when the platform stops.
    const database = await scratchPostgresDatabase()
    cleanUp.push(() => database.drop())
    const mediaDir = join(directory, 'other-server', 'media')
    const platform = await startTestPlatform('postgres', {
      databaseUrl: database.url,
      mediaDir,
      pushDispatch: false,
    })
    const partner = await createPartner(platform, 'Moved')
    await platform.stop()
    // A recording written in the last moments before the dump: its change is still queued, not yet
    // numbered (with no platform running, nothing numbers it), under this server's transaction ids.
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    cleanUp.push(() => client.end())
    await client.query(
      `INSERT INTO recordings (audio_id, enterprise_id, device_uid, title, recorded_at, denoise_url, record_duration)
       VALUES ('aud_queued_0001', $1, 'DEV-Q', 'Queued', '2026-11-02T10:00:00Z', 'https://cdn.example.com/queued.mp3', 1)`,
      [partner.enterpriseId],
    )
    const [queued] = (
      await client.query<{ txid: string }>(
        "SELECT txid::text AS txid FROM recording_change_queue WHERE audio_id = 'aud_queued_0001'",
      )
    ).rows
    assert.ok(queued, 'the change is queued when the dump is taken')
    const backup = join(directory, 'other-server', 'backup')
    await run(
      'postgres-backup',
      { DATABASE_URL: database.url, BACKUP: backup, EARSHOT_MEDIA_DIR: mediaDir },
      clientPath,
    )

    const cluster: PostgresCluster = await startPostgresCluster()
    cleanUp.push(() => cluster.destroy())
    const admin = new pg.Client({ connectionString: cluster.url })
    await admin.connect()
    await admin.query('CREATE DATABASE earshot_restored')
    const [{ xid }] = (await admin.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid'))
      .rows as [{ xid: string }]
    await admin.end()
    assert.ok(BigInt(xid) < BigInt(queued.txid), 'the new server is behind the first one')

    const restoreUrl = new URL(cluster.url)
    restoreUrl.pathname = '/earshot_restored'
    const restoredMedia = join(directory, 'other-server', 'restored-media')
    await run(
      'postgres-restore',
      { RESTORE_URL: restoreUrl.toString(), BACKUP: backup, EARSHOT_MEDIA_DIR: restoredMedia },
      clientPath,
    )
    const restored = await startTestPlatform('postgres', {
      databaseUrl: restoreUrl.toString(),
      mediaDir: restoredMedia,
      pushDispatch: false,
    })
    cleanUp.push(() => restored.stop())
    const feed = await partnerFor(restored, partner).call('/openapi/v1/audios/changes', {})
    const page = feed.plaintext as { items: { audioId: string; change: string }[]; lagSeconds: number }
    assert.deepEqual(
      page.items.map(({ audioId, change }) => `${change} ${audioId}`),
      ['created aud_queued_0001'],
    )
    assert.equal(page.lagSeconds, 0)
  })
})
