import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { JsonObject } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { type CliProcess, startCliProcess } from '@earshot/test-kit/cli-process'
import { seededPartnerData } from '@earshot/test-kit/pglite-image'
import { closedPort, runCli } from '@earshot/test-kit/run-cli'
import { EarshotClient } from '../client/earshot-client.js'
import { openDatabase } from '../storage/database.js'
import { mirrorOf, platformRecordingsOf } from './sync.test.support.js'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

function recording(i: number): JsonObject {
  return {
    audioId: `sync-${String(i).padStart(2, '0')}`,
    deviceUid: `dev-${i % 3}`,
    title: `Recording ${i}`,
    recordedAt: `2026-02-01T10:${String(i % 60).padStart(2, '0')}:00Z`,
    denoiseUrl: `https://media.example/${i}.mp3`,
    recordDuration: 1000 + i,
    ...(i % 4 === 0 && {
      transcript: {
        transcriptId: i,
        transcriptText: `words ${i}`,
        sentences: [{ text: `words ${i}`, beginTime: 0, endTime: 800 }],
        durationMs: 800,
        wordsCount: 2,
      },
    }),
  }
}

describe('earshot-partner sync against a real platform', { timeout: 300_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner
  let client: EarshotClient
  let dir: string
  let env: Record<string, string>
  const followers: CliProcess[] = []

  const credentials = (of: TestPartner, baseUrl = platform.partnerUrl) => ({
    EARSHOT_BASE_URL: baseUrl,
    EARSHOT_ENTERPRISE_ID: String(of.enterpriseId),
    EARSHOT_KEY_VERSION: String(of.keyVersion),
    EARSHOT_SECRET: of.secret,
  })
  const recordingParams = (audioId: string) => ({ enterpriseId: partner.enterpriseId, audioId })
  const follow = (args: string[], extraEnv = env) => {
    const follower = startCliProcess(bin, ['sync', '--follow', ...args], extraEnv)
    followers.push(follower)
    return follower
  }
  const appliedLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('applied '))

  before(async () => {
    platform = await startTestPlatform('pglite')
    partner = await createPartner(platform, 'Sync Co')
    client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
    for (let i = 0; i < 30; i++) await ingest(platform, partner.enterpriseId, recording(i))
    for (const i of [1, 2]) {
      await adminCall(platform, 'updateRecording', {
        params: recordingParams(recording(i).audioId as string),
        body: { title: `Updated ${i}` },
      })
    }
    for (const i of [3, 4, 5]) {
      await adminCall(platform, 'deleteRecording', {
        params: recordingParams(recording(i).audioId as string),
      })
    }
    dir = await mkdtemp(join(tmpdir(), 'earshot-sync-'))
    env = credentials(partner)
  })
  after(async () => {
    for (const follower of followers) await follower.kill()
    await platform?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('sync builds the mirror, exits 0 once caught up, and goes on from its cursor', async () => {
    const data = await seededPartnerData(join(dir, 'once'))
    let feedLength = 0
    for await (const page of client.iterateChanges()) feedLength += page.items.length
    assert.equal(feedLength, 35)

    const first = await runCli(bin, ['sync', '--data', data, '--size', '7', '--json'], env)
    assert.equal(first.code, 0, first.stderr)
    const summary = JSON.parse(first.stdout)
    assert.deepEqual(Object.keys(summary), ['applied', 'cursor', 'lagSeconds'])
    assert.equal(summary.lagSeconds, 0)
    assert.equal(summary.applied, 35)
    assert.equal(typeof summary.cursor, 'string')
    assert.equal(appliedLines(first.stderr).length, 5, 'a line per page of 7')
    assert.deepEqual(await mirrorOf(data), await platformRecordingsOf(client))
    assert.equal((await mirrorOf(data)).size, 27)

    const again = await runCli(bin, ['sync', '--data', data, '--json'], env)
    assert.equal(again.code, 0, again.stderr)
    assert.deepEqual(JSON.parse(again.stdout), { applied: 0, cursor: summary.cursor, lagSeconds: 0 })
    assert.equal(again.stderr, '')

    // Later changes: only they are applied.
    await adminCall(platform, 'deleteRecording', { params: recordingParams('sync-06') })
    await adminCall(platform, 'attachTranscript', {
      params: recordingParams('sync-07'),
      body: {
        transcriptId: 7,
        transcriptText: 'late words',
        sentences: [{ text: 'late words', beginTime: 0, endTime: 500 }],
        durationMs: 500,
        wordsCount: 2,
      },
    })
    await adminCall(platform, 'updateRecording', {
      params: recordingParams('sync-08'),
      body: { title: 'renamed' },
    })
    await ingest(platform, partner.enterpriseId, recording(30))
    const later = await runCli(bin, ['sync', '--data', data], env)
    assert.equal(later.code, 0, later.stderr)
    assert.equal(later.stdout, 'Caught up: applied 4 changes; the mirror holds 27 recordings.\n')
    const mirror = await mirrorOf(data)
    assert.deepEqual(mirror, await platformRecordingsOf(client))
    assert.equal(mirror.get('sync-08')?.title, 'renamed')
    assert.equal(mirror.has('sync-06'), false)
  })

  test('--follow applies changes as they come; SIGTERM and SIGINT stop it with exit 0', async () => {
    const data = await seededPartnerData(join(dir, 'follow'))
    const follower = follow(['--data', data])
    await follower.waitForOutput('the first pages', ({ stderr }) =>
      /through seq \d+\ncaught up; following the change feed\n/.test(stderr),
    )
    const audioId = await ingest(platform, partner.enterpriseId, recording(31))
    await follower.waitForOutput('the new recording applied', ({ stderr }) =>
      appliedLines(stderr).some((line) => line.startsWith('applied 1 change ')),
    )
    // The data directory is held: a second sync is refused.
    const second = await runCli(bin, ['sync', '--data', data], env)
    assert.equal(second.code, 1)
    assert.match(second.stderr, /the data directory .* is in use by process \d+/)

    follower.child.kill('SIGTERM')
    assert.equal(await follower.exited, 0, follower.stderr())
    assert.match(follower.stderr(), /^SIGTERM: stopping$/m)
    assert.match(follower.stdout(), /^Stopped: applied \d+ changes; the mirror holds \d+ recordings\.\n$/)
    const mirror = await mirrorOf(data)
    assert.ok(mirror.has(audioId))

    const json = follow(['--data', data, '--json'])
    await json.waitForOutput('following', ({ stderr }) => stderr === 'caught up; following the change feed\n')
    json.child.kill('SIGINT')
    assert.equal(await json.exited, 0, json.stderr())
    assert.deepEqual(Object.keys(JSON.parse(json.stdout())), ['applied', 'cursor', 'lagSeconds'])
  })

  test("refusals: another enterprise's mirror, a cursor the platform refuses, a platform out of reach", async () => {
    const data = await seededPartnerData(join(dir, 'refusals'))
    assert.equal((await runCli(bin, ['sync', '--data', data], env)).code, 0)

    const other = await createPartner(platform, 'Other Co')
    const foreign = await runCli(bin, ['sync', '--data', data], credentials(other))
    assert.equal(foreign.code, 1)
    assert.match(
      foreign.stderr,
      new RegExp(
        `holds the recordings of enterprise ${partner.enterpriseId}, not of enterprise ${other.enterpriseId}`,
      ),
    )

    const unreachable = credentials(partner, `http://127.0.0.1:${await closedPort()}`)
    const down = await runCli(bin, ['sync', '--data', data], unreachable)
    assert.equal(down.code, 1)
    assert.match(down.stderr, /cannot reach the platform/)
    // Following, it waits for the platform instead.
    const waiting = follow(['--data', data], unreachable)
    await waiting.waitForOutput('a retry announced', ({ stderr }) =>
      /^warning: cannot reach the platform .*; polling again in \d+\.\d s$/m.test(stderr),
    )
    waiting.child.kill('SIGTERM')
    assert.equal(await waiting.exited, 0, waiting.stderr())

    const db = await openDatabase({ dataDir: join(data, 'db') })
    try {
      await db.query(`UPDATE mirror_state SET cursor = 'not-a-cursor'`)
    } finally {
      await db.close()
    }
    const refused = await runCli(bin, ['sync', '--data', data, '--json'], env)
    assert.equal(refused.code, 1)
    assert.equal(JSON.parse(refused.stdout).error.code, 4001)
    assert.match(refused.stderr, /^error 4001: cursor: /)

    const missing = await runCli(bin, ['sync', '--data', data], {})
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /missing credentials/)
  })
})
