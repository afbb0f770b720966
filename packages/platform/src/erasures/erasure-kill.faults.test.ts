/**
 * Fault injection: the platform is killed with SIGKILL at random moments while it erases a device's
 * recordings, and restarted on the same storage each time. The erasure must end as one never
 * interrupted does: every recording of the device deleted and pushed as deleted, its audio gone from the
 * store, no trace of its content left, the rest untouched, and the report confirmed.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import {
  adminClientOf,
  allInState,
  type CallbackQueue,
  callbackQueue,
  createEnterprise,
  importRecordings,
  type LedgerReceiver,
  seededRandom,
  setPushUrl,
  startLedgerReceiver,
  waitFor,
} from '@earshot/test-kit/fault-kit'
import { type RestartablePlatform, restartablePlatform } from '@earshot/test-kit/fault-platform'
import { findTextInPostgres } from '@earshot/test-kit/text-scan'

const ERASED = 240
const KEPT = 60
const KILLS = 3
/** Every content value of an erased recording holds this; of a kept one, KEEP. */
const MARK = 'ERASEMARK'
const KEEP = 'KEEPMARK'

function lines(): { text: string; erased: string[]; kept: string[] } {
  const erased: string[] = []
  const kept: string[] = []
  const text = Array.from({ length: ERASED + KEPT }, (_, i) => {
    const gone = i < ERASED
    const mark = gone ? MARK : KEEP
    const audioId = `kill-erase-${i}`
    ;(gone ? erased : kept).push(audioId)
    return JSON.stringify({
      audioId,
      deviceUid: `DEV-${mark}`,
      title: `${mark} title ${i}`,
      recordedAt: new Date(Date.UTC(2026, 1, 1) + i * 1000).toISOString(),
      denoiseUrl: `https://media.example/${mark}/${i}.mp3`,
      recordDuration: 1000,
      transcript: {
        transcriptId: i + 1,
        transcriptText: `${mark} words ${i}`,
        sentences: [{ text: `${mark} words ${i}`, beginTime: 0, endTime: 700 }],
        durationMs: 700,
        wordsCount: 3,
      },
    })
  }).join('\n')
  return { text: `${text}\n`, erased, kept }
}

const audioOf = (audioId: string) => Buffer.from(`AUDIO-BYTES-OF-${audioId}-`.repeat(40))

for (const backend of testBackends) {
  describe(`${backend}: SIGKILL of the platform at ${KILLS} random moments during an erasure`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'earshot-faults-erasure-'))
    let scratch: ScratchDatabase | undefined
    let platform: RestartablePlatform | undefined
    let receiver: LedgerReceiver | undefined
    let callbacks: CallbackQueue | undefined
    after(async () => {
      callbacks?.stop()
      await platform?.dispose()
      await receiver?.close()
      await scratch?.drop()
      rmSync(directory, { recursive: true, force: true })
    })

    test('the erasure finishes after each restart with the same result', { timeout: 300_000 }, async (t) => {
      const random = seededRandom(`erasure-kill ${backend}`, (line) => t.diagnostic(line))
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      const mediaDir = join(directory, 'media')
      platform = await restartablePlatform({
        ...(scratch ? { DATABASE_URL: scratch.url } : { EARSHOT_DATA_DIR: join(directory, 'data') }),
        EARSHOT_MEDIA_DIR: mediaDir,
        EARSHOT_PUSH_ALLOW_PRIVATE: '1',
        EARSHOT_PUSH_TIMEOUT: '2',
        EARSHOT_PUSH_RETRY_SCHEDULE: '0.2,0.2,0.5,1,1,1,1,1,1,1,1,1',
        EARSHOT_RATE_LIMIT: '0',
        EARSHOT_ERASURE_BATCH: '8',
        EARSHOT_ERASURE_LEASE: '2',
      })
      const running = platform
      const credentials = await createEnterprise(running.current, 'Erased')
      callbacks = callbackQueue(() => running.current.partnerUrl, credentials)
      const queue = callbacks
      receiver = await startLedgerReceiver(credentials.secret, {
        // A partner calls back after every push it acknowledges; after a deletion, to confirm it erased.
        onAcked: (push) => queue.send(push.audioId, { erased: push.eventType === PushEventType.DELETED }),
      })
      const ledger = receiver
      await setPushUrl(running.current, credentials.enterpriseId, receiver.url)
      const batch = lines()
      await importRecordings(running.current, credentials.enterpriseId, {
        lines: batch.text,
        audioIds: [...batch.erased, ...batch.kept],
        events: 0,
      })
      const withAudio = [...batch.erased.slice(0, 10), ...batch.kept.slice(0, 5)]
      for (const audioId of withAudio) {
        await adminClientOf(running.current).uploadAudio(credentials.enterpriseId, audioId, audioOf(audioId), {
          contentType: 'audio/wav',
        })
      }
      // Two parts a recording (audio, transcript), and an update for each with stored audio.
      const events = 2 * (ERASED + KEPT) + withAudio.length
      await allInState(() => running.current, credentials.enterpriseId, 'confirmed', events, { timeoutMs: 120_000 })

      const { erasureId, recordings } = await adminClientOf(running.current).call('createErasure', {
        params: { enterpriseId: credentials.enterpriseId },
        body: { deviceUid: `DEV-${MARK}`, reason: 'fault suite' },
      })
      assert.equal(recordings, ERASED)
      const deletions = () => ledger.pushes.filter((push) => push.eventType === PushEventType.DELETED).length
      for (let kill = 0; kill < KILLS; kill++) {
        const after = Math.min(ERASED - 1, deletions() + random.int(1, 40))
        await waitFor(() => `${after} deletion pushes`, async () => deletions() >= after, { intervalMs: 20 })
        t.diagnostic(`kill ${kill + 1} after ${deletions()} deletion pushes`)
        await running.kill()
        await running.start()
      }
      const shown = await waitFor(
        () => 'the erasure confirmed',
        async () => {
          const erasure = await adminClientOf(running.current).call('showErasure', { params: { erasureId } })
          return erasure.state === 'confirmed' && erasure
        },
        { timeoutMs: 120_000 },
      )
      assert.equal(shown.recordings, ERASED)
      assert.deepEqual(
        shown.endpoints.map(({ deletions, acknowledged, confirmed }) => ({ deletions, acknowledged, confirmed })),
        [{ deletions: ERASED, acknowledged: ERASED, confirmed: ERASED }],
      )
      const deleted = new Set(
        ledger.pushes.filter((push) => push.eventType === PushEventType.DELETED).map((push) => push.audioId),
      )
      assert.deepEqual([...deleted].sort(), [...batch.erased].sort())

      const listed = await adminClientOf(running.current).call('listRecordings', {
        params: { enterpriseId: credentials.enterpriseId },
        query: { size: 100 },
      })
      assert.equal(listed.total, KEPT)
      const files = readdirSync(mediaDir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
      const bytes = files.map((entry) => readFileSync(join(entry.parentPath, entry.name)).toString('latin1'))
      assert.equal(bytes.filter((content) => content.includes(`AUDIO-BYTES-OF-kill-erase-`)).length, 5)
      for (const audioId of batch.erased.slice(0, 10)) {
        assert.ok(!bytes.some((content) => content.includes(`AUDIO-BYTES-OF-${audioId}-`)), audioId)
      }
      assert.ok(!running.logs().includes(MARK), 'no log line holds erased content')
      if (scratch) {
        assert.deepEqual(await findTextInPostgres(scratch.url, [MARK]), [])
        assert.ok((await findTextInPostgres(scratch.url, [KEEP])).length > 0)
      }
    })
  })
}
