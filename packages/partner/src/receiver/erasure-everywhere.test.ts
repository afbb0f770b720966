import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { createPublicKey, verify } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { adminContracts } from '@earshot/platform/internal'
import { type JsonObject, PushEventType } from '@earshot/protocol'
import { oneTestBackend, startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { adminClientOf, allInState, callbackQueue, importRecordings } from '@earshot/test-kit/fault-kit'
import { LogCapture } from '@earshot/test-kit/log-capture'
import { seededPartnerData } from '@earshot/test-kit/pglite-image'
import { runCli, spawnCli } from '@earshot/test-kit/run-cli'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { findText } from '@earshot/test-kit/text-scan'
import canonicalize from 'canonicalize'

/**
 * A device's 1,000 recordings erased, then looked for everywhere a reader can look: every admin GET route,
 * the partner API (query, change feed, deliveries with their attempts' answers, endpoints), the CLI, the
 * platform's log, every text column of every table by SQL, the media store, and the partner kit's store
 * (`earshot-partner listen`, its recordings and fetched audio). The report is confirmed and verifies.
 */

const ERASED = 1000
const KEPT = 20
const MARK = 'ERASEMARK'
const KEEP = 'KEEPMARK'
const partnerBin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))
const platformBin = fileURLToPath(new URL('../../../platform/bin/earshot.js', import.meta.url))
const audioOf = (audioId: string) => Buffer.from(`AUDIO-OF-${audioId}-`.repeat(20))

function recordingLines(): { text: string; erased: string[]; kept: string[] } {
  const erased: string[] = []
  const kept: string[] = []
  const lines = Array.from({ length: ERASED + KEPT }, (_, i) => {
    const gone = i < ERASED
    const mark = gone ? MARK : KEEP
    const audioId = `everywhere-${i}`
    ;(gone ? erased : kept).push(audioId)
    return JSON.stringify({
      audioId,
      deviceUid: `DEV-${mark}`,
      title: `${mark} meeting ${i}`,
      recordedAt: new Date(Date.UTC(2026, 5, 1) + i * 60_000).toISOString(),
      transcript: {
        transcriptId: i + 1,
        transcriptText: `${mark} said ${i}`,
        sentences: [{ text: `${mark} said ${i}`, beginTime: 0, endTime: 800 }],
        durationMs: 800,
        wordsCount: 3,
      },
    })
  })
  return { text: `${lines.join('\n')}\n`, erased, kept }
}

/** Starts `earshot-partner listen` and waits for its "listening on" line. */
async function startListen(
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawnCli(partnerBin, ['listen', '--port', '0', ...args], env)
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      const match = /^listening on (\S+)$/m.exec(stdout)
      if (match) resolve(match[1] as string)
    })
    child.once('exit', (code) => reject(new Error(`listen exited with ${code}: ${stderr}`)))
  })
  return { child, url }
}

/** The paths of every complete file under a directory (not a download in progress). */
async function completeFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => [])
  return entries
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.part'))
    .map((entry) => join(entry.parentPath, entry.name))
}

/** Every complete file under a directory, read as text. */
async function filesUnder(directory: string): Promise<string[]> {
  const texts = await Promise.all(
    (await completeFiles(directory)).map((path) => readFile(path, 'latin1').catch(() => undefined)),
  )
  return texts.filter((text) => text !== undefined)
}

/** Minutes on either backend: once per run of the test command, on the one it runs (each in CI). */
const backend = oneTestBackend

describe(`${backend}: a device's ${ERASED} recordings erased, looked for everywhere`, {
  timeout: 600_000,
}, () => {
  const logs = new LogCapture()
  let platform: TestPlatform
  let partner: TestPartner
  let echo: TestReceiver
  let listener: ChildProcess | undefined
  let stopCallbacks = () => {}
  let dir: string

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'earshot-erasure-everywhere-'))
    platform = await startTestPlatform(
      backend,
      {
        pushAllowPrivate: true,
        pushRetryScheduleSeconds: [0.2],
        pushConfirmWindowSeconds: 5,
        rateLimitPerMinute: 0,
        // The kit, its audio downloads and the test all connect from 127.0.0.1.
        maxConnectionsPerClient: 0,
        // What is looked for here is what is left, not how gently it goes (bench:retention).
        erasureBatch: 100,
        erasureRate: 10_000,
      },
      { logDestination: logs.destination },
    )
    partner = await createPartner(platform, 'Everywhere')
  })
  after(async () => {
    stopCallbacks()
    listener?.kill('SIGKILL')
    await echo?.close()
    await platform?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  test('no trace of the erased recordings is left, and the report is confirmed', async () => {
    const env = {
      EARSHOT_BASE_URL: platform.partnerUrl,
      EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
      EARSHOT_KEY_VERSION: String(partner.keyVersion),
      EARSHOT_SECRET: partner.secret,
    }
    const kitDir = await seededPartnerData(join(dir, 'kit'))
    const kitAudio = join(dir, 'kit-audio')
    const listened = await startListen(['--data', kitDir, '--store', 'files', '--audio', kitAudio], env)
    listener = listened.child
    const callbacks = callbackQueue(() => platform.partnerUrl, partner)
    stopCallbacks = () => callbacks.stop()
    // A second endpoint answers with what it received: the kept attempt answers hold the content.
    echo = await startTestReceiver(partner.secret, {
      answer: (push) => ({ status: 200, body: { code: 2000, received: JSON.stringify(push.event.data) } }),
      afterAnswer: (push) => {
        if (push.event.eventType !== PushEventType.DELETED)
          void partner.call('/openapi/v1/callback', { audioId: push.event.audioId })
      },
    })
    for (const url of [listened.url, echo.url]) await partner.call('/openapi/v1/endpoints/add', { url })

    const batch = recordingLines()
    await importRecordings(platform, partner.enterpriseId, { lines: batch.text, audioIds: [], events: 0 })
    const admin = adminClientOf(platform)
    const all = [...batch.erased, ...batch.kept]
    for (let start = 0; start < all.length; start += 20) {
      await Promise.all(
        all.slice(start, start + 20).map((audioId) =>
          admin.uploadAudio(partner.enterpriseId, audioId, audioOf(audioId), {
            contentType: 'audio/wav',
          }),
        ),
      )
    }
    // Per endpoint: the transcript part, then audio_ready once the audio is stored.
    await allInState(() => platform, partner.enterpriseId, 'confirmed', 2 * 2 * all.length, {
      timeoutMs: 300_000,
    })
    await eventually(
      async () => (await completeFiles(kitAudio)).length >= all.length,
      120_000,
      'the kit fetching the audio',
    )
    assert.ok((await findText(platform.context.db, [MARK])).length > 0, 'the content is there before')

    const erasure = JSON.parse(
      (
        await runCli(
          platformBin,
          [
            'erasure',
            'create',
            '--enterprise',
            String(partner.enterpriseId),
            '--device-uid',
            `DEV-${MARK}`,
            '--reason',
            'subject request',
            '--json',
          ],
          {
            EARSHOT_URL: platform.adminUrl,
            EARSHOT_ADMIN_TOKEN: platform.adminToken,
          },
        )
      ).stdout,
    ) as { erasureId: number; recordings: number }
    assert.equal(erasure.recordings, ERASED)
    const shown = await eventually(
      async () => {
        const erasureNow = await adminCall(platform, 'showErasure', {
          params: { erasureId: erasure.erasureId },
        })
        return erasureNow.state === 'confirmed' && erasureNow
      },
      300_000,
      'the erasure confirmed by the kit',
    )
    for (const progress of shown.endpoints) {
      assert.deepEqual(progress, {
        endpointId: progress.endpointId,
        deletions: ERASED,
        acknowledged: ERASED,
        confirmed: ERASED,
      })
    }

    await assertNoTrace(platform, partner, erasure.erasureId, batch.erased)
    assert.deepEqual(await findText(platform.context.db, [MARK]), [], 'no text column holds erased content')
    assert.ok((await findText(platform.context.db, [KEEP])).length > 0, 'what was not erased is still there')
    assert.ok(!logs.text.some((line) => line.includes(MARK)), 'no log line holds erased content')
    const stored: string[] = []
    for await (const file of platform.context.media.store.list()) {
      stored.push(await new Response((await platform.context.media.store.read(file.key)) as never).text())
    }
    assert.equal(stored.length, KEPT)
    assert.ok(
      !stored.some(
        (bytes) =>
          bytes.includes('AUDIO-OF-everywhere-') &&
          batch.erased.some((id) => bytes.startsWith(`AUDIO-OF-${id}-`)),
      ),
    )
    const kitAudioFiles = await filesUnder(kitAudio)
    const kitFiles = [...(await filesUnder(kitDir)), ...kitAudioFiles]
    assert.ok(!kitFiles.some((text) => text.includes(MARK)), "the kit's store holds no erased recording")
    assert.equal(kitAudioFiles.filter((bytes) => bytes.startsWith('AUDIO-OF-')).length, KEPT)
    await assertReportVerifies(platform, erasure.erasureId)
  })
})

/** The admin API's every GET route, the partner API and the CLI show nothing of the erased recordings. */
async function assertNoTrace(
  platform: TestPlatform,
  partner: TestPartner,
  erasureId: number,
  erased: string[],
) {
  const [deliveryOfErased] = await platform.context.db.query<{ delivery_id: number }>(
    'SELECT delivery_id FROM deliveries WHERE audio_id = $1 LIMIT 1',
    [erased[0]],
  )
  const endpoints = await adminCall(platform, 'listEnterpriseEndpoints', {
    params: { enterpriseId: partner.enterpriseId },
  })
  const values: Record<string, string> = {
    enterpriseId: String(partner.enterpriseId),
    erasureId: String(erasureId),
    audioId: erased[0] as string,
    deliveryId: String(deliveryOfErased?.delivery_id),
    endpointId: String(endpoints.endpoints[0]?.endpointId),
  }
  let read = 0
  for (const contract of adminContracts) {
    if (contract.method !== 'GET') continue
    const names = [...contract.path.matchAll(/:(\w+)/g)].map((match) => match[1] as string)
    if (names.some((name) => !(name in values))) continue
    const path = contract.path.replace(/:(\w+)/g, (_, name: string) => values[name] as string)
    const query =
      contract.path.startsWith('/admin/v1/recordings') || contract.operationId === 'listDeliveries'
        ? `?enterpriseId=${partner.enterpriseId}`
        : ''
    const response = await fetch(`${platform.adminUrl}${path}${query}`, {
      headers: { authorization: `Bearer ${platform.adminToken}` },
    })
    const text = await response.text()
    assert.ok(!text.includes(MARK), `${contract.operationId} shows erased content`)
    read++
  }
  assert.ok(read > 20, `${read} admin routes read`)
  const partnerReads: [string, JsonObject][] = [
    ['/openapi/v1/audios', { deviceUid: `DEV-${MARK}` }],
    ['/openapi/v1/audios', { size: 100 }],
    ['/openapi/v1/deliveries/list', { audioId: erased[0] as string }],
    ['/openapi/v1/deliveries/list', {}],
    ['/openapi/v1/endpoints/list', {}],
  ]
  for (const [path, plaintext] of partnerReads) {
    const reply = await partner.call(path, plaintext)
    assert.ok(!JSON.stringify(reply).includes(MARK), `${path} shows erased content`)
  }
  let cursor: string | undefined
  for (;;) {
    const reply = await partner.call('/openapi/v1/audios/changes', cursor ? { cursor } : {})
    const page = reply.plaintext as { items: unknown[]; nextCursor: string; hasMore: boolean }
    assert.ok(!JSON.stringify(page.items).includes(MARK), 'the change feed shows erased content')
    if (!page.hasMore) break
    cursor = page.nextCursor
  }
  const cliEnv = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
  for (const args of [
    ['deliveries', 'list', '--enterprise', String(partner.enterpriseId), '--limit', '500', '--json'],
    ['deliveries', 'list', '--audio-id', erased[0] as string, '--json'],
    ['deliveries', 'show', values.deliveryId as string, '--json'],
    ['erasure', 'list', '--json'],
    ['enterprise', 'list', '--json'],
    ['audit', 'export'],
    ['erasure', 'show', String(erasureId), '--json'],
    ['erasure', 'report', String(erasureId)],
  ]) {
    const run = await runCli(platformBin, args, cliEnv)
    assert.equal(run.code, 0, `earshot ${args.join(' ')}: ${run.stderr}`)
    assert.ok(!`${run.stdout}${run.stderr}`.includes(MARK), `earshot ${args.join(' ')} shows erased content`)
  }
}

async function assertReportVerifies(platform: TestPlatform, erasureId: number) {
  const signed = await adminCall(platform, 'erasureReport', { params: { erasureId } })
  assert.equal(signed.report.state, 'confirmed')
  assert.equal(signed.report.audioIds.length, ERASED)
  const jwk = (await (
    await fetch(`${platform.partnerUrl}/.well-known/earshot-erasure-key`)
  ).json()) as JsonObject
  const key = createPublicKey({ key: jwk as never, format: 'jwk' })
  const signature = Buffer.from(signed.signature, 'base64url')
  assert.ok(verify(null, Buffer.from(canonicalize(signed.report) as string), key, signature))
}
