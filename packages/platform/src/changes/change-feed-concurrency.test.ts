import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Change } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { createPartner } from '@earshot/test-kit/calls'
import { everyChangeNumbered } from '@earshot/test-kit/change-feed'
import { deleteRecording, insertRecordings, updateRecording } from '../recordings/recording-store.js'
import { readChanges } from './change-feed.js'

/**
 * A change is visible only once every change numbered before it is committed or abandoned. Eight writers,
 * half for each of two enterprises, commit transactions of one to four changes in whatever order the
 * database finishes them, some rolled back; two readers per enterprise follow its feed meanwhile. Each must
 * see every committed change of its enterprise exactly once, numbered 1, 2, 3… with no gap, and nothing of
 * what was rolled back.
 */

const WRITERS = 8
const READERS_PER_ENTERPRISE = 2
const CHANGES = 10_000
const PER_WRITER = CHANGES / WRITERS

class Abandoned extends Error {}

const yieldTurn = () => new Promise((resolve) => setImmediate(resolve))

for (const backend of testBackends) {
  describe(`the change feed under concurrent writers (${backend})`, { timeout: 240_000 }, () => {
    let platform: TestPlatform
    let enterprises: number[]

    before(async () => {
      platform = await startTestPlatform(backend)
      enterprises = [
        (await createPartner(platform, 'Concurrent A')).enterpriseId,
        (await createPartner(platform, 'Concurrent B')).enterpriseId,
      ]
    })
    after(async () => {
      await platform?.stop()
    })

    test(`${WRITERS} writers over two enterprises, ${CHANGES} changes: each reader sees its enterprise's changes once, numbered 1..n`, async () => {
      const { db, recordingEvents: events } = platform.context
      let writing = true

      async function writer(w: number): Promise<number> {
        const enterpriseId = enterprises[w % 2] as number
        const own: string[] = []
        let made = 0
        let abandoned = 0
        for (let t = 0; made < PER_WRITER; t++) {
          const size = Math.min(1 + ((w + t) % 4), PER_WRITER - made)
          const abandon = t % 17 === 5
          try {
            await db.transaction(async (tx) => {
              for (let i = 0; i < size; i++) {
                const existing = own[(t * 7 + i) % Math.max(own.length, 1)]
                const kind = own.length > 4 ? (t + i) % 5 : 0
                if (kind === 3 && existing) {
                  await updateRecording(tx, enterpriseId, existing, { title: `t${t}-${i}` }, events)
                } else if (kind === 4 && existing && !abandon) {
                  await deleteRecording(tx, enterpriseId, existing, events)
                  own.splice(own.indexOf(existing), 1)
                } else {
                  const audioId = `w${w}-t${t}-${i}`
                  await insertRecordings(
                    tx,
                    enterpriseId,
                    [
                      {
                        audioId,
                        deviceUid: `dev-${w}`,
                        title: audioId,
                        recordedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, made + i)).toISOString(),
                        denoiseUrl: `https://cdn.example/${audioId}.mp3`,
                        recordDuration: 1,
                      },
                    ],
                    events,
                  )
                  if (!abandon) own.push(audioId)
                }
                // Let other writers' transactions start and commit while this one is open.
                await yieldTurn()
              }
              if (abandon) throw new Abandoned()
            })
            made += size
          } catch (error) {
            if (!(error instanceof Abandoned)) throw error
            abandoned++
          }
        }
        return abandoned
      }

      async function reader(enterpriseId: number): Promise<Change[]> {
        const seen: Change[] = []
        let cursor: string | undefined
        for (;;) {
          const stillWriting = writing
          const page = await readChanges(db, enterpriseId, { cursor, size: 100 })
          seen.push(...page.items)
          cursor = page.nextCursor
          if (!page.hasMore && !stillWriting) return seen
          // Caught up: poll again shortly, as a partner following the feed would.
          if (!page.hasMore) await new Promise((resolve) => setTimeout(resolve, 5))
        }
      }

      const readers = enterprises.map((enterpriseId) =>
        Array.from({ length: READERS_PER_ENTERPRISE }, () => reader(enterpriseId)),
      )
      // The readers stop at the end of the feed once writing is over and every change is numbered: numbering
      // waits for every older transaction of the server, another database's (a suite beside this one) too.
      const abandoned = await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
        .then(async (counts) => {
          for (const enterpriseId of enterprises) await everyChangeNumbered(platform, enterpriseId)
          return counts
        })
        .finally(() => {
          writing = false
        })
      assert.ok(
        abandoned.every((n) => n > 0),
        'every writer rolled some transactions back',
      )
      const seen = await Promise.all(readers.map((each) => Promise.all(each)))
      const key = (change: Change) => `${change.seq}:${change.audioId}:${change.change}`
      let total = 0
      for (const [e, enterpriseId] of enterprises.entries()) {
        const [full = [], ...others] = seen[e] ?? []
        // Seqs are the enterprise's own, contiguous: an abandoned transaction leaves no gap.
        full.forEach((change, i) => {
          assert.equal(change.seq, i + 1)
        })
        for (const other of others) assert.deepEqual(other.map(key), full.map(key))
        const [committed] = await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM recording_changes WHERE enterprise_id = $1',
          [enterpriseId],
        )
        assert.equal(committed?.n, full.length, 'every committed change of the enterprise was read')
        assert.ok(
          full.every((change) => change.audioId.startsWith('w') && Number(change.audioId[1]) % 2 === e),
        )
        assert.deepEqual(
          full.filter((change) => change.audioId.includes('-t5-')).map((change) => change.change),
          [],
          'a transaction rolled back leaves no change',
        )
        total += full.length
      }
      assert.equal(total, CHANGES, 'every committed change, nothing rolled back')
      const { items: first, hasMore } = await readChanges(db, enterprises[0] as number, {
        cursor: undefined,
        size: 100,
      })
      assert.equal(first.length, 100)
      assert.ok(hasMore)
    })
  })
}
