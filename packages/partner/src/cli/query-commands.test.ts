import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { JsonObject } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { adminClientOf } from '@earshot/test-kit/fault-kit'
import { runCli } from '@earshot/test-kit/run-cli'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

const transcript = (durationMs: number) => ({
  transcriptId: durationMs,
  transcriptText: 'hello there',
  sentences: [{ text: 'hello there', beginTime: 0, endTime: 900 }],
  durationMs,
  wordsCount: 2,
})

/** The three shapes of a recording's data, with durations from under a second to over an hour. */
const recordings: JsonObject[] = [
  {
    audioId: 'audio-only',
    deviceUid: 'DEV-1',
    title: 'Audio only',
    recordedAt: '2026-02-01T10:00:00Z',
    denoiseUrl: 'https://media.example/a.mp3',
    recordDuration: 30_000,
  },
  {
    audioId: 'transcript-only',
    deviceUid: 'DEV-1',
    title: 'Transcript only',
    recordedAt: '2026-02-01T11:00:00Z',
    transcript: transcript(1_500),
  },
  {
    audioId: 'both-parts',
    deviceUid: 'DEV-2',
    title: 'Both parts',
    recordedAt: '2026-02-01T12:00:00Z',
    denoiseUrl: 'https://media.example/b.mp3',
    recordDuration: 3_725_400,
    transcript: transcript(3_725_400),
  },
  {
    audioId: 'short',
    deviceUid: 'DEV-2',
    title: 'Short',
    recordedAt: '2026-02-01T13:00:00Z',
    denoiseUrl: 'https://media.example/c.mp3',
    recordDuration: 40,
  },
]

describe('earshot-partner query and export: what they print', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let partner: TestPartner
  let dir: string
  let env: Record<string, string>
  const cli = (...args: string[]) => runCli(bin, args, env)

  before(async () => {
    platform = await startTestPlatform('pglite')
    partner = await createPartner(platform, 'Table Co')
    for (const recording of recordings) await ingest(platform, partner.enterpriseId, recording)
    dir = await mkdtemp(join(tmpdir(), 'earshot-partner-query-'))
    env = {
      EARSHOT_BASE_URL: platform.partnerUrl,
      EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
      EARSHOT_KEY_VERSION: String(partner.keyVersion),
      EARSHOT_SECRET: partner.secret,
    }
  })

  after(async () => {
    await platform?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('query: every duration in seconds with one decimal, the unit in the header, right-aligned', async () => {
    const result = await cli('query')
    assert.equal(result.code, 0, result.stderr)
    const [header, ...rest] = result.stdout.trimEnd().split('\n')
    assert.ok(header)
    assert.match(
      header,
      /^AUDIO ID\s+RECORDED AT \(UTC\)\s+DEVICE UID\s+TITLE\s+DURATION \(s\)\s+TRANSCRIPT$/,
    )
    assert.equal(rest.at(-1), 'page 1 of 1, total 4')
    const rows = rest.slice(0, -1)
    // The column ends where its header does: the numbers' decimal points line up beneath it.
    const end = header.indexOf('DURATION (s)') + 'DURATION (s)'.length
    const durations = Object.fromEntries(
      rows.map((row) => {
        const cell = /(\S+)$/.exec(row.slice(0, end))?.[1] ?? ''
        assert.equal(row[end], ' ', `the duration of ${row} ends under its header`)
        return [row.split(/\s+/)[0], cell]
      }),
    )
    assert.deepEqual(durations, {
      short: '0.0',
      'both-parts': '3725.4',
      'transcript-only': '1.5',
      'audio-only': '30.0',
    })
    for (const cell of Object.values(durations)) assert.match(cell, /^\d+\.\d$/, 'a number, one unit')
  })

  test('query: recordedAt in its own column, in UTC', async () => {
    const [header, ...rows] = (await cli('query')).stdout.trimEnd().split('\n')
    assert.match(header ?? '', /^AUDIO ID\s+RECORDED AT \(UTC\)\s+DEVICE UID/)
    const recordedAt = Object.fromEntries(rows.slice(0, -1).map((row) => row.split(/\s+/).slice(0, 2)))
    assert.deepEqual(recordedAt, {
      short: '2026-02-01T13:00:00.000Z',
      'both-parts': '2026-02-01T12:00:00.000Z',
      'transcript-only': '2026-02-01T11:00:00.000Z',
      'audio-only': '2026-02-01T10:00:00.000Z',
    })
  })

  test('export writes the import format: imported into another platform, partners see the same data', async () => {
    const out = join(dir, 'export.jsonl')
    const result = await cli('export', '--out', out)
    assert.equal(result.code, 0, result.stderr)
    const exported = (await readFile(out, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.deepEqual(
      exported.find((line) => line.audioId === 'both-parts'),
      { ...recordings[2], recordedAt: '2026-02-01T12:00:00.000Z' },
    )

    const other = await startTestPlatform('pglite')
    try {
      const otherPartner = await createPartner(other, 'Import Co')
      let summary: unknown
      for await (const line of adminClientOf(other).importRecordings(
        otherPartner.enterpriseId,
        await readFile(out),
      ))
        summary = line
      assert.deepEqual(summary, { imported: 4, skipped: 0 })
      const otherEnv = {
        ...env,
        EARSHOT_BASE_URL: other.partnerUrl,
        EARSHOT_ENTERPRISE_ID: String(otherPartner.enterpriseId),
        EARSHOT_KEY_VERSION: String(otherPartner.keyVersion),
        EARSHOT_SECRET: otherPartner.secret,
      }
      const imported = JSON.parse((await runCli(bin, ['query', '--json'], otherEnv)).stdout)
      const original = JSON.parse((await cli('query', '--json')).stdout)
      assert.equal(imported.total, 4)
      assert.deepEqual(imported.items, original.items)
    } finally {
      await other.stop()
    }
    assert.match((await cli('export', '--help')).stdout, /import format/)
  })
})
