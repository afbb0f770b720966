/**
 * Fault injection (issue 14, 5): `earshot-partner sync --follow` is killed with SIGKILL 10 times while
 * 5,000 changes (creates, transcripts, updates, deletes) are made through the admin API. Each kill
 * lands once the follower has applied a page of its run, at a random moment after it: mid-request,
 * mid-transaction or between polls. A final `sync` then catches up, and the mirror must equal what the
 * platform's query answers, having taken every change of the feed exactly once.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { type CliProcess, startCliProcess } from '@earshot/test-kit/cli-process'
import { adminClientOf, createEnterprise, seededRandom, waitFor } from '@earshot/test-kit/fault-kit'
import { type RestartablePlatform, restartablePlatform } from '@earshot/test-kit/fault-platform'
import { runCli } from '@earshot/test-kit/run-cli'
import { EarshotClient } from '../client/earshot-client.js'
import { openDatabase } from '../storage/database.js'
import { mirrorOf, platformRecordingsOf } from './sync.test.support.js'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))
const KILLS = 10
const CHANGES = 5000
/** The changes go on this far past a kill's point before they wait for it: the kill is due by then. */
const SLACK = 200

// The mirror keeps its own embedded database whatever the platform runs on: one backend is enough —
// the PostgreSQL one when DATABASE_URL is set (as in CI), else the embedded one.
const backend = testBackends.at(-1) ?? 'pglite'
describe(`${backend}: earshot-partner sync --follow killed while the feed grows`, () => {
  const directory = mkdtempSync(join(tmpdir(), 'earshot-faults-sync-'))
  let scratch: ScratchDatabase | undefined
  let platform: RestartablePlatform | undefined
  const followers: CliProcess[] = []
  after(async () => {
    for (const follower of followers) await follower.kill()
    await platform?.dispose()
    await scratch?.drop()
    rmSync(directory, { recursive: true, force: true })
  })

  test(`${KILLS} kills during ${CHANGES} changes: the mirror equals the platform`, {
    timeout: 240_000,
  }, async (t) => {
    const log = (line: string) => t.diagnostic(line)
    const random = seededRandom(`sync-kill ${backend}`, (line) => {
      console.log(line)
      log(line)
    })
    scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
    platform = await restartablePlatform({
      ...(scratch ? { DATABASE_URL: scratch.url } : { EARSHOT_DATA_DIR: join(directory, 'platform') }),
      EARSHOT_RATE_LIMIT: '0',
    })
    const running = platform.current
    const credentials = await createEnterprise(running, 'Mirrored')
    const env = {
      EARSHOT_BASE_URL: running.partnerUrl,
      EARSHOT_ENTERPRISE_ID: String(credentials.enterpriseId),
      EARSHOT_KEY_VERSION: String(credentials.keyVersion),
      EARSHOT_SECRET: credentials.secret,
    }
    const data = join(directory, 'mirror')
    const admin = adminClientOf(running)
    const { enterpriseId } = credentials

    // The platform's recordings as the changes leave them: audioId → has a transcript.
    const live: string[] = []
    const transcribed = new Set<string>()
    const pick = () => live[random.int(0, live.length - 1)] as string
    const counts = { created: 0, transcript_added: 0, updated: 0, deleted: 0 }
    const makeChange = async (n: number) => {
      const roll = random.next()
      if (live.length < 20 || roll < 0.35) {
        const audioId = `m-${n}`
        await admin.call('ingestRecording', {
          params: { enterpriseId },
          body: {
            audioId,
            deviceUid: `dev-${n % 5}`,
            title: `Recording ${n}`,
            recordedAt: new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString(),
            denoiseUrl: `https://media.example/${n}.mp3`,
            recordDuration: 1000 + n,
          },
        })
        live.push(audioId)
        counts.created++
        return
      }
      const audioId = pick()
      if (roll < 0.55 && !transcribed.has(audioId)) {
        await admin.call('attachTranscript', {
          params: { enterpriseId, audioId },
          body: {
            transcriptId: n,
            transcriptText: `words ${n}`,
            sentences: [{ text: `words ${n}`, beginTime: 0, endTime: 700 }],
            durationMs: 700,
            wordsCount: 2,
          },
        })
        transcribed.add(audioId)
        counts.transcript_added++
      } else if (roll < 0.87) {
        await admin.updateRecording(enterpriseId, audioId, {
          title: `Title ${n}`,
          ...(n % 3 === 0 && { deviceUid: `dev-moved-${n}` }),
        })
        counts.updated++
      } else {
        await admin.deleteRecording(enterpriseId, audioId)
        live.splice(live.indexOf(audioId), 1)
        transcribed.delete(audioId)
        counts.deleted++
      }
    }

    // Where each kill falls along the changes: one in each of KILLS + 1 stretches, jittered.
    const stretch = CHANGES / (KILLS + 1)
    const killAt = Array.from({ length: KILLS }, (_, i) =>
      Math.round((i + 1) * stretch + (random.next() - 0.5) * stretch * 0.5),
    )
    let made = 0
    let killed = 0
    let killDone: () => void = () => {}
    const changing = (async () => {
      for (let n = 0; n < CHANGES; n++) {
        while (killed < KILLS && n >= (killAt[killed] as number) + SLACK) {
          await new Promise<void>((resolve) => {
            killDone = resolve
          })
        }
        await makeChange(n)
        made = n + 1
      }
    })()

    const began = performance.now()
    const kills: string[] = []
    const applied = (follower: CliProcess) =>
      follower
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('applied ')).length
    for (let kill = 0; kill < KILLS; kill++) {
      const follower = startCliProcess(bin, ['sync', '--follow', '--data', data], env)
      followers.push(follower)
      await waitFor(
        `kill ${kill + 1}: the changes past ${killAt[kill]} and a page applied`,
        async () => {
          if (follower.child.exitCode !== null) throw new Error(`sync exited: ${follower.stderr()}`)
          return made >= (killAt[kill] as number) && applied(follower) > 0
        },
        { intervalMs: 5, timeoutMs: 60_000 },
      )
      await sleep(random.int(0, 150))
      await follower.kill()
      assert.equal(await follower.exited, 'SIGKILL', follower.stderr())
      kills.push(`#${kill + 1} at change ${made} after ${applied(follower)} pages`)
      killed++
      killDone()
    }
    await changing
    log(`kills: ${kills.join('; ')}`)
    log(`changes ${JSON.stringify(counts)} in ${Math.round(performance.now() - began)} ms`)

    const final = await runCli(bin, ['sync', '--data', data, '--json'], env)
    assert.equal(final.code, 0, final.stderr)
    const summary = JSON.parse(final.stdout) as { applied: number; cursor: string }
    log(`the final sync applied ${summary.applied} changes`)

    const client = new EarshotClient({ ...credentials, baseUrl: running.partnerUrl })
    const platformRecordings = await platformRecordingsOf(client)
    assert.deepEqual(
      [...platformRecordings.keys()].sort(),
      [...live].sort(),
      'the platform holds what was made',
    )
    assert.deepEqual(await mirrorOf(data), platformRecordings)

    // Every change of the feed was taken exactly once: a page applied twice would count twice.
    let feedLength = 0
    let lastSeq = 0
    for await (const page of client.iterateChanges()) {
      feedLength += page.items.length
      lastSeq = page.items.at(-1)?.seq ?? lastSeq
    }
    assert.equal(feedLength, CHANGES)
    const db = await openDatabase({ dataDir: join(data, 'db') })
    try {
      const [state] = await db.query<{ applied: number; last_seq: number; cursor: string }>(
        'SELECT applied, last_seq, cursor FROM mirror_state',
      )
      assert.deepEqual(state, { applied: CHANGES, last_seq: lastSeq, cursor: summary.cursor })
    } finally {
      await db.close()
    }
  })
})
