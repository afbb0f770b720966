import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { seededPartnerData } from '@earshot/test-kit/pglite-image'
import { closedPort, runCli, spawnCli } from '@earshot/test-kit/run-cli'
import { openDatabase } from '../storage/database.js'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))
const E2E_RECORDINGS = 500
/** Every tenth recording has its transcript too: a second event. */
const E2E_EVENTS = E2E_RECORDINGS + E2E_RECORDINGS / 10

interface Listener {
  child: ChildProcess
  url: string
  stderr: () => string
  exited: Promise<number | null>
}

/** Starts the built `earshot-partner listen` and waits for its "listening on" line. */
async function startListen(args: string[], env: Record<string, string>): Promise<Listener> {
  const child = spawnCli(bin, ['listen', '--port', '0', ...args], env)
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`listen did not start: ${stderr}`)), 60_000)
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      const match = /^listening on (\S+)$/m.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`listen exited with ${code}: ${stderr}`))
    })
  })
  return { child, url, stderr: () => stderr, exited }
}

describe('earshot-partner listen against a real platform', { timeout: 300_000 }, () => {
  let platform: TestPlatform
  let dir: string
  const children: Listener[] = []

  before(async () => {
    platform = await startTestPlatform('pglite', { pushAllowPrivate: true, pushTimeoutSeconds: 10 })
    dir = await mkdtemp(join(tmpdir(), 'earshot-listen-'))
  })
  after(async () => {
    for (const { child } of children) child.kill('SIGKILL')
    await platform?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  const credentials = (partner: TestPartner, baseUrl: string) => ({
    EARSHOT_BASE_URL: baseUrl,
    EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
    EARSHOT_KEY_VERSION: String(partner.keyVersion),
    EARSHOT_SECRET: partner.secret,
  })
  const listen = async (args: string[], env: Record<string, string>) => {
    const listener = await startListen(args, env)
    children.push(listener)
    return listener
  }
  const setPushUrl = async (partner: TestPartner, url: string) => {
    await adminCall(platform, 'setPushUrl', {
      params: { enterpriseId: partner.enterpriseId },
      body: { pushUrl: url },
    })
  }
  const deliveryStates = async (enterpriseId: number) =>
    platform.context.db.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM deliveries WHERE enterprise_id = $1 GROUP BY state',
      [enterpriseId],
    )

  test(`end to end: ${E2E_RECORDINGS} recordings pushed, each stored once and confirmed`, async () => {
    const partner = await createPartner(platform, 'Listen Co')
    const data = await seededPartnerData(join(dir, 'e2e'))
    const listener = await listen(['--data', data], credentials(partner, platform.partnerUrl))
    await setPushUrl(partner, listener.url)

    const lines = Array.from({ length: E2E_RECORDINGS }, (_, i) =>
      JSON.stringify({
        audioId: `e2e-${String(i).padStart(3, '0')}`,
        deviceUid: `dev-${i % 7}`,
        title: `Recording ${i}`,
        recordedAt: '2026-03-01T10:00:00+08:00',
        denoiseUrl: `https://media.example/${i}.mp3`,
        recordDuration: 1000 + i,
        ...(i % 10 === 0 && {
          transcript: {
            transcriptId: i,
            transcriptText: `words ${i}`,
            sentences: [{ text: `words ${i}`, beginTime: 0, endTime: 700 }],
            durationMs: 700,
            wordsCount: 2,
          },
        }),
      }),
    )
    const imported = await fetch(
      `${platform.adminUrl}/admin/v1/enterprises/${partner.enterpriseId}/recordings/import`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
        body: `${lines.join('\n')}\n`,
      },
    )
    assert.equal(imported.status, 200, await imported.clone().text())
    assert.match(await imported.text(), new RegExp(`"imported":${E2E_RECORDINGS}`))

    const states = await eventually(
      async () => {
        const rows = await deliveryStates(partner.enterpriseId)
        return rows.length === 1 && rows[0]?.state === 'confirmed' && rows[0].n === E2E_EVENTS && rows
      },
      180_000,
      `all ${E2E_EVENTS} deliveries confirmed`,
    )
    assert.deepEqual(states, [{ state: 'confirmed', n: E2E_EVENTS }])
    const [receipts] = await platform.context.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM receipts WHERE enterprise_id = $1',
      [partner.enterpriseId],
    )
    assert.equal(receipts?.n, E2E_RECORDINGS)

    listener.child.kill('SIGTERM')
    assert.equal(await listener.exited, 0, listener.stderr())
    const stored = listener
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith('stored '))
    assert.equal(stored.length, E2E_EVENTS, 'onRecording once per event')
    assert.doesNotMatch(listener.stderr(), /^(warning|error):/m)

    // The partner's own database: each recording stored exactly once, every callback confirmed.
    const db = await openDatabase({ dataDir: join(data, 'db') })
    try {
      const [row] = await db.query<{
        rows: number
        distinct_keys: number
        transcripts: number
        sentences: number
      }>(
        `SELECT count(*)::int AS rows, count(DISTINCT (audio_id, event_type))::int AS distinct_keys,
                count(*) FILTER (WHERE event_type = 'recording.transcript_ready')::int AS transcripts,
                count(sentences)::int AS sentences
           FROM recordings`,
      )
      assert.deepEqual(row, {
        rows: E2E_EVENTS,
        distinct_keys: E2E_EVENTS,
        transcripts: E2E_RECORDINGS / 10,
        // Set A from the start for the recordings with a transcript: both of their events carry sentences.
        sentences: (2 * E2E_RECORDINGS) / 10,
      })
      const callbacks = await db.query<{ state: string; n: number }>(
        'SELECT state, count(*)::int AS n FROM earshot_receipt_callbacks GROUP BY state',
      )
      assert.deepEqual(callbacks, [{ state: 'confirmed', n: E2E_EVENTS }])
    } finally {
      await db.close()
    }
  })

  test('kill -9 after the answer, before the callback: the restarted listener confirms it', async () => {
    const partner = await createPartner(platform, 'Crash Co')
    const data = await seededPartnerData(join(dir, 'crash'))
    // The platform's partner API is out of reach at first, so no callback can get through.
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    const first = await listen(['--data', data, '--store', 'files'], credentials(partner, unreachable))
    await setPushUrl(partner, first.url)
    const audioId = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'DEV-CRASH',
      title: 'before the crash',
      recordedAt: '2026-03-01T10:00:00+08:00',
      denoiseUrl: 'https://media.example/crash.mp3',
      recordDuration: 5000,
    })
    const file = join(data, 'recordings', `${audioId}.recording.audio_ready.json`)
    // Answered (the platform recorded its ack) and the callback attempted, in vain.
    await eventually(
      async () => (await deliveryStates(partner.enterpriseId))[0]?.state === 'acked',
      60_000,
      'the push acknowledged',
    )
    await eventually(
      async () => /receipt callback failed; will retry/.test(first.stderr()),
      60_000,
      'a failed callback',
    )
    first.child.kill('SIGKILL')
    assert.equal(await first.exited, null)
    assert.ok(existsSync(file), 'stored before the answer')
    assert.deepEqual(await deliveryStates(partner.enterpriseId), [{ state: 'acked', n: 1 }])

    const second = await listen(
      ['--data', data, '--store', 'files'],
      credentials(partner, platform.partnerUrl),
    )
    await eventually(
      async () => (await deliveryStates(partner.enterpriseId))[0]?.state === 'confirmed',
      30_000,
      'the delivery confirmed after the restart',
    )
    const [receipt] = await platform.context.db.query('SELECT audio_id FROM receipts WHERE audio_id = $1', [
      audioId,
    ])
    assert.ok(receipt)
    await eventually(
      async () => second.stderr().includes(`confirmed ${audioId}`),
      60_000,
      'the confirmation logged',
    )

    second.child.kill('SIGTERM')
    assert.equal(await second.exited, 0)
    assert.deepEqual(await readdir(join(data, 'recordings')), [`${audioId}.recording.audio_ready.json`])
    const saved = JSON.parse(await readFile(file, 'utf8'))
    assert.equal(saved.audioId, audioId)
    assert.equal(saved.data.title, 'before the crash')
  })

  test('a deleted recording is removed from the store, and the deletion confirmed', async () => {
    const partner = await createPartner(platform, 'Deleting Co')
    const data = await seededPartnerData(join(dir, 'deleting'))
    const listener = await listen(['--data', data], credentials(partner, platform.partnerUrl))
    await setPushUrl(partner, listener.url)
    const recording = (title: string) => ({
      deviceUid: 'DEV-DEL',
      title,
      recordedAt: '2026-03-01T10:00:00+08:00',
      denoiseUrl: 'https://media.example/del.mp3',
      recordDuration: 1000,
    })
    const audioId = await ingest(platform, partner.enterpriseId, recording('deleted soon'))
    const kept = await ingest(platform, partner.enterpriseId, recording('kept'))
    await eventually(
      async () => {
        const rows = await deliveryStates(partner.enterpriseId)
        return rows.length === 1 && rows[0]?.state === 'confirmed' && rows[0].n === 2
      },
      60_000,
      'both recordings pushed and confirmed',
    )
    await adminCall(platform, 'deleteRecording', { params: { enterpriseId: partner.enterpriseId, audioId } })
    await eventually(
      async () => {
        const [row] = await platform.context.db.query<{ state: string }>(
          `SELECT state FROM deliveries WHERE audio_id = $1 AND event_type = 'recording.deleted'`,
          [audioId],
        )
        return row?.state === 'confirmed'
      },
      60_000,
      'the deletion pushed and confirmed',
    )
    await eventually(
      async () => listener.stderr().includes(`deleted ${audioId} (event `),
      30_000,
      'the deletion logged',
    )
    // The erasure confirmed after the removal, and answered 2000 by the platform: the partner had it.
    await eventually(
      async () => listener.stderr().includes(`confirmed the erasure of ${audioId}`),
      30_000,
      'the erasure confirmed',
    )

    listener.child.kill('SIGTERM')
    assert.equal(await listener.exited, 0, listener.stderr())
    const db = await openDatabase({ dataDir: join(data, 'db') })
    try {
      const erasures = await db.query<{ audio_id: string; state: string }>(
        'SELECT audio_id, state FROM earshot_receipt_callbacks WHERE erased',
      )
      assert.deepEqual(erasures, [{ audio_id: audioId, state: 'confirmed' }])
      const stored = await db.query<{ audio_id: string }>('SELECT audio_id FROM recordings')
      assert.deepEqual(
        stored.map((row) => row.audio_id),
        [kept],
      )
      const tombstones = await db.query<{ audio_id: string }>('SELECT audio_id FROM deleted_recordings')
      assert.deepEqual(
        tombstones.map((row) => row.audio_id),
        [audioId],
      )
    } finally {
      await db.close()
    }
  })

  test('kill -9 after the deletion was answered, before its erasure confirmation: the restart sends it', async () => {
    const partner = await createPartner(platform, 'Crash Erasure Co')
    const data = await seededPartnerData(join(dir, 'crash-erasure'))
    // The platform's partner API is out of reach at first, so no callback can get through.
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    const first = await listen(['--data', data, '--store', 'files'], credentials(partner, unreachable))
    await setPushUrl(partner, first.url)
    const audioId = await ingest(platform, partner.enterpriseId, {
      deviceUid: 'DEV-CRASH',
      title: 'erased before the crash',
      recordedAt: '2026-03-01T10:00:00+08:00',
      denoiseUrl: 'https://media.example/crash-erasure.mp3',
      recordDuration: 5000,
    })
    await eventually(
      async () => (await deliveryStates(partner.enterpriseId))[0]?.state === 'acked',
      60_000,
      'the push acknowledged',
    )
    await adminCall(platform, 'deleteRecording', { params: { enterpriseId: partner.enterpriseId, audioId } })
    // The deletion answered (a deletion's delivery is confirmed by its ack), its erasure tried in vain.
    await eventually(
      async () => {
        const [row] = await platform.context.db.query<{ state: string }>(
          `SELECT state FROM deliveries WHERE audio_id = $1 AND event_type = 'recording.deleted'`,
          [audioId],
        )
        return row?.state === 'confirmed' && first.stderr().includes(`deleted ${audioId} (event `)
      },
      60_000,
      'the deletion answered',
    )
    first.child.kill('SIGKILL')
    assert.equal(await first.exited, null)
    assert.deepEqual(await readdir(join(data, 'recordings')), [`${audioId}.recording.deleted.json`])

    const second = await listen(
      ['--data', data, '--store', 'files'],
      credentials(partner, platform.partnerUrl),
    )
    await eventually(
      async () => second.stderr().includes(`confirmed the erasure of ${audioId}`),
      60_000,
      'the erasure confirmed after the restart',
    )
    const confirmed = await platform.context.db.query(
      'SELECT 1 FROM erasure_confirmations WHERE audio_id = $1',
      [audioId],
    )
    assert.equal(confirmed.length, 1, 'the platform recorded the erasure confirmation')
    second.child.kill('SIGTERM')
    assert.equal(await second.exited, 0, second.stderr())
  })

  test('refuses to start without credentials, or on a data directory in use', async () => {
    const partner = await createPartner(platform, 'Misconfigured Co')
    const missing = await runCli(bin, ['listen', '--port', '0', '--data', join(dir, 'none')], {})
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /missing credentials: set EARSHOT_ENTERPRISE_ID and EARSHOT_SECRET/)

    const data = await seededPartnerData(join(dir, 'locked'))
    const holder = await listen(['--data', data], credentials(partner, platform.partnerUrl))
    const second = await runCli(
      bin,
      ['listen', '--port', '0', '--data', data],
      credentials(partner, platform.partnerUrl),
    )
    assert.equal(second.code, 1)
    assert.match(second.stderr, /is in use by process \d+/)
    holder.child.kill('SIGTERM')
    assert.equal(await holder.exited, 0)
  })
})
