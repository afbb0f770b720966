import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin, adminCall, adminRefusal, createPartner, ingest } from '@earshot/test-kit/calls'

/**
 * The JSON Lines import: streamed, validated whole before
 * anything is written, committed in chunks, and completed by running the same file again.
 */

/** The first line of a refusal listing bad lines; each bad line follows on a line of its own. */
const REFUSED = 'nothing was imported; fix these lines and import the file again:\n'

interface Refusal {
  code: number
  msg: string
}

const transcript = {
  transcriptId: 77,
  transcriptText: 'hi',
  sentences: [{ text: 'hi', beginTime: 0, endTime: 400 }],
  durationMs: 400,
  wordsCount: 1,
}

/** One recording line: an audio part, with the audioId when given. */
function line(audioId: string | undefined, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    ...(audioId && { audioId }),
    deviceUid: 'dev-import',
    title: `imported ${audioId ?? 'anonymous'}`,
    recordedAt: '2026-05-01T09:00:00+02:00',
    denoiseUrl: 'https://cdn.example/i.mp3',
    recordDuration: 3,
    ...extra,
  })
}

type Body = string | Uint8Array | AsyncIterable<Uint8Array>

/** POSTs a body to the import endpoint; a stream is sent as it is produced. */
function post(
  target: TestPlatform,
  enterpriseId: number,
  body: Body,
  signal?: AbortSignal,
): Promise<Response> {
  const streamed = typeof body !== 'string' && !(body instanceof Uint8Array)
  return fetch(`${target.adminUrl}/admin/v1/enterprises/${enterpriseId}/recordings/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.adminToken}`, 'content-type': 'application/x-ndjson' },
    body,
    ...(streamed && { duplex: 'half' }),
    ...(signal && { signal }),
  })
}

for (const backend of testBackends) {
  describe(`JSON Lines import (${backend})`, { timeout: 180_000 }, () => {
    let platform: TestPlatform

    before(async () => {
      // Deliveries are created by the import; sending them is not what these tests are about.
      platform = await startTestPlatform(backend, { pushDispatch: false })
    })
    after(async () => {
      await platform?.stop()
    })

    /** Imports the lines, expecting success: the NDJSON lines of the answer, the summary last. */
    async function imported(enterpriseId: number, lines: string[]) {
      const response = await post(platform, enterpriseId, lines.join('\n'))
      const text = await response.text()
      assert.equal(response.status, 200, text)
      const answer = text
        .trim()
        .split('\n')
        .map((each) => JSON.parse(each))
      return { summary: answer.at(-1), progress: answer.slice(0, -1) }
    }

    /** Imports the body, expecting it refused whole with 400 and 4001. */
    async function refused(enterpriseId: number, body: Body): Promise<string> {
      const response = await post(platform, enterpriseId, body)
      const refusal = (await response.json()) as Refusal
      assert.equal(response.status, 400, JSON.stringify(refusal))
      assert.equal(refusal.code, 4001)
      return refusal.msg
    }

    const countRecordings = (enterpriseId: number) => countIn(platform, enterpriseId)

    /** Deliveries by "audioId eventType", with how many there are of each. */
    async function deliveriesOf(enterpriseId: number): Promise<Map<string, number>> {
      const rows = await platform.context.db.query<{ audio_id: string; event_type: string; n: number }>(
        `SELECT audio_id, event_type, count(*) AS n FROM deliveries WHERE enterprise_id = $1
          GROUP BY audio_id, event_type`,
        [enterpriseId],
      )
      return new Map(rows.map((row) => [`${row.audio_id} ${row.event_type}`, row.n]))
    }

    /** A new enterprise with a push URL, so that imports create deliveries. */
    async function pushingEnterprise(name: string): Promise<number> {
      const { enterpriseId } = await createPartner(platform, name)
      await adminCall(platform, 'setPushUrl', {
        params: { enterpriseId },
        body: { pushUrl: 'http://127.0.0.1:9/earshot' },
      })
      return enterpriseId
    }

    test('a good file streams progress and ends with {"imported":N,"skipped":0}', async () => {
      const target = await createPartner(platform, 'Importer')
      const text = [line('imp-1'), '', line(undefined, { transcript }), `${line('imp-3')}\r`, ''].join('\n')
      const response = await post(platform, target.enterpriseId, text)
      assert.equal(response.status, 200)
      assert.match(response.headers.get('content-type') ?? '', /^application\/x-ndjson/)
      const answer = await response.text()
      assert.ok(answer.endsWith('\n'))
      assert.deepEqual(
        answer
          .trim()
          .split('\n')
          .map((each) => JSON.parse(each)),
        [
          { progress: 0, total: 3 },
          { progress: 3, total: 3 },
          { imported: 3, skipped: 0 },
        ],
      )
      assert.equal(await countRecordings(target.enterpriseId), 3)
      const listed = await target.call('/openapi/v1/audios', { deviceUid: 'dev-import' })
      assert.equal(listed.plaintext?.total, 3)
      const assigned = await platform.context.db.query<{ audio_id: string }>(
        `SELECT audio_id FROM recordings WHERE enterprise_id = $1 AND audio_id NOT LIKE 'imp-%'`,
        [target.enterpriseId],
      )
      assert.match(assigned[0]?.audio_id ?? '', /^aud_[A-Za-z0-9_-]{16}$/)
    })

    test("a large import leaves the planner's statistics of the recordings current before it reports done", async () => {
      const { enterpriseId } = await createPartner(platform, 'Statistics')
      const { db } = platform.context
      const estimate = async () => {
        const [row] = await db.query<{ rows: number }>(
          "SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = 'recordings'::regclass",
        )
        return row?.rows ?? -1
      }
      const [before] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM recordings')
      const lines = Array.from({ length: 3000 }, (_, i) => line(`stats-${i}`))
      const { summary } = await imported(enterpriseId, lines)
      assert.deepEqual(summary, { imported: 3000, skipped: 0 })
      assert.equal(await estimate(), (before?.n ?? 0) + 3000, 'ANALYZE counted every row')
      // A small one leaves them to autovacuum (or the embedded upkeep).
      await imported(enterpriseId, [line('stats-small')])
      assert.equal(await estimate(), (before?.n ?? 0) + 3000)
    })

    test('a bad line 2 is reported with its number and nothing is imported', async () => {
      const { enterpriseId } = await createPartner(platform, 'Bad Lines')
      const { recordDuration: _omit, ...noDuration } = JSON.parse(line('bad-2'))
      const msg = await refused(enterpriseId, [line('bad-1'), JSON.stringify(noDuration)].join('\n'))
      assert.match(
        msg,
        /^nothing was imported; fix these lines and import the file again:\nline 2: denoiseUrl/,
      )
      assert.doesNotMatch(msg, /line 1/)
      assert.equal(
        await refused(enterpriseId, `${line('bad-3')}\n{oops\n`),
        `${REFUSED}line 2: is not valid JSON at column 2: expected property name or '}'`,
      )
      assert.match(await refused(enterpriseId, '\n\n'), /holds no recordings/)
      assert.equal(await countRecordings(enterpriseId), 0)
    })

    test('bad lines are listed in order, the first 10 only', async () => {
      const { enterpriseId } = await createPartner(platform, 'Many Bad Lines')
      const lines = Array.from({ length: 30 }, (_, i) => (i % 2 ? '{oops' : line(`many-${i}`)))
      const msg = await refused(enterpriseId, lines.join('\n'))
      const reported = [...msg.matchAll(/line (\d+):/g)].map((match) => Number(match[1]))
      assert.deepEqual(reported, [2, 4, 6, 8, 10, 12, 14, 16, 18, 20])
      // One bad line a line of the message, then a word that there may be more.
      const msgLines = msg.split('\n')
      assert.equal(msgLines.length, 12)
      assert.equal(msgLines[1], "line 2: is not valid JSON at column 2: expected property name or '}'")
      assert.equal(msgLines[11], '(only the first 10 bad lines are listed; there may be more)')
      assert.equal(await countRecordings(enterpriseId), 0)
    })

    test('a line that is not JSON is refused with its line and column', async () => {
      const { enterpriseId } = await createPartner(platform, 'Columns')
      const good = line('col-1')
      const msg = await refused(
        enterpriseId,
        [
          good,
          good.replace('"audioId"', 'audioId'),
          `${good.slice(0, -1)},}`,
          // Columns count characters: 🎧 is one (two UTF-16 units).
          good.replace('"dev-import"', '"🎧-import" x'),
          good.slice(0, 40),
          `  ${good.replace('"title"', "'title'")}`,
          `${good} {}`,
          good.replace('3}', 'tru}'),
        ].join('\n'),
      )
      assert.equal(
        msg,
        REFUSED +
          [
            "line 2: is not valid JSON at column 2: expected property name or '}'",
            `line 3: is not valid JSON at column ${good.length + 1}: expected double-quoted property name`,
            `line 4: is not valid JSON at column ${good.indexOf('"dev-import"') + 12}: expected ',' or '}' after property value`,
            'line 5: is not valid JSON at column 41: the JSON ends early',
            `line 6: is not valid JSON at column ${good.indexOf('"title"') + 3}: expected double-quoted property name`,
            `line 7: is not valid JSON at column ${good.length + 2}: unexpected non-whitespace character after JSON`,
            `line 8: is not valid JSON at column ${good.indexOf('3}') + 4}: unexpected token '}'`,
          ].join('\n'),
      )
      assert.equal(await countRecordings(enterpriseId), 0)
    })

    test('a JSON array given as the file is refused as such, whole or over several lines', async () => {
      const { enterpriseId } = await createPartner(platform, 'Array Sender')
      const recordings = [JSON.parse(line('arr-1')), JSON.parse(line('arr-2'))]
      const expected =
        'nothing was imported: the file must be JSON Lines, one recording object per line, not a JSON array ' +
        "(no [ ] around the recordings, no commas between lines); jq -c '.[]' FILE.json > FILE.jsonl converts an array"
      for (const body of [
        JSON.stringify(recordings),
        `\n  ${JSON.stringify(recordings, null, 2)}\n`,
        `\ufeff${JSON.stringify(recordings)}`,
        // Longer than a line may be (4 MiB): told by its first bytes.
        JSON.stringify(Array.from({ length: 20_000 }, (_, i) => JSON.parse(line(`arr-big-${i}`)))),
      ]) {
        assert.equal(await refused(enterpriseId, body), expected)
      }
      // An array on a later line is that line's problem.
      const later = await refused(enterpriseId, [line('arr-3'), JSON.stringify(recordings)].join('\n'))
      assert.equal(later, `${REFUSED}line 2: is a JSON array: each line must be one recording object`)
      assert.equal(await countRecordings(enterpriseId), 0)
    })

    test('a line with invalid UTF-8 bytes is refused with its number, never stored with U+FFFD', async () => {
      const { enterpriseId } = await createPartner(platform, 'Bad Bytes')
      const [before, after] = line('utf-2', { title: 'café MARK' }).split('MARK') as [string, string]
      const body = Buffer.concat([
        Buffer.from(`${line('utf-1', { title: 'café 日本 🎧' })}\n`),
        Buffer.from(before),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from(`${after}\n${line('utf-3')}\n`),
      ])
      const msg = await refused(enterpriseId, body)
      assert.equal(msg, `${REFUSED}line 2: is not valid UTF-8`)
      assert.equal(await countRecordings(enterpriseId), 0)

      // The same file with the bad bytes replaced imports, multi-byte characters intact.
      const fixed = Buffer.from(body.toString('latin1').replace('\u00c3(\u00ff', 'e'), 'latin1')
      const response = await post(platform, enterpriseId, fixed)
      assert.match(await response.text(), /\{"imported":3,"skipped":0\}\n$/)
      const titles = await platform.context.db.query<{ title: string }>(
        'SELECT title FROM recordings WHERE enterprise_id = $1 ORDER BY audio_id',
        [enterpriseId],
      )
      assert.deepEqual(
        titles.map((row) => row.title),
        ['café 日本 🎧', 'café e', 'imported utf-3'],
      )
    })

    test('a line repeating an earlier audioId is refused', async () => {
      const { enterpriseId } = await createPartner(platform, 'Repeater')
      const msg = await refused(enterpriseId, [line('rep-1'), line('rep-2'), line('rep-1')].join('\n'))
      assert.match(msg, /line 3: audioId: repeats the audioId of line 1/)
      assert.equal(await countRecordings(enterpriseId), 0)
    })

    test("an audioId beginning check_ (the receiver check's) is refused, imported or ingested alone", async () => {
      const { enterpriseId } = await createPartner(platform, 'Check Named')
      const msg = await refused(enterpriseId, [line('fine-1'), line('check_1')].join('\n'))
      assert.match(
        msg,
        /^nothing was imported; [^\n]*\nline 2: audioId: must not begin "check_": the receiver check/,
      )
      assert.doesNotMatch(msg, /line 1/)
      const alone = await adminRefusal(platform, 'ingestRecording', {
        params: { enterpriseId },
        body: JSON.parse(line('check_alone')),
      })
      assert.equal(alone.status, 400)
      assert.equal(alone.code, 4001)
      assert.match(alone.msg, /^audioId: must not begin "check_"/)
      assert.equal(await countRecordings(enterpriseId), 0)
      // Only the prefix is reserved.
      assert.deepEqual((await imported(enterpriseId, [line('a_check_1'), line('Check_1')])).summary, {
        imported: 2,
        skipped: 0,
      })
    })

    test('repeats are found across chunks; identical lines without audioId stay distinct and re-import as skipped', async () => {
      const { enterpriseId } = await createPartner(platform, 'Far apart')
      const filler = (from: number) => Array.from({ length: 600 }, (_, i) => line(`far-${from + i}`))
      const repeated = [line('far-start'), ...filler(0), line('far-start')]
      const msg = await refused(enterpriseId, repeated.join('\n'))
      assert.equal(msg, `${REFUSED}line 602: audioId: repeats the audioId of line 1`)

      const twin = line(undefined, { title: 'twin' })
      const twins = [twin, ...filler(1000), twin, twin]
      assert.deepEqual((await imported(enterpriseId, twins)).summary, { imported: 603, skipped: 0 })
      assert.equal(await countRecordings(enterpriseId), 603)
      assert.deepEqual((await imported(enterpriseId, twins)).summary, { imported: 0, skipped: 603 })
    })

    test('an audioId of another enterprise is refused with its line number', async () => {
      const owner = await createPartner(platform, 'Owner')
      await ingest(platform, owner.enterpriseId, JSON.parse(line('owned-1')))
      const { enterpriseId } = await createPartner(platform, 'Late Importer')
      const msg = await refused(enterpriseId, [line('late-1'), line('owned-1'), line('late-3')].join('\n'))
      assert.match(msg, /line 2: audioId "owned-1" already exists in another enterprise/)
      assert.equal(await countRecordings(enterpriseId), 0)
    })

    test('re-running after a partial import imports the rest and skips what is stored', async () => {
      const enterpriseId = await pushingEnterprise('Resumer')
      const file = Array.from({ length: 40 }, (_, i) =>
        line(i % 3 === 0 ? undefined : `resume-${i}`, {
          title: `resume ${i % 3 === 0 ? 'anonymous' : i}`,
          ...(i % 4 === 0 && { transcript: { ...transcript, transcriptId: i } }),
        }),
      )
      // Lines 1, 4, 7, … have no audioId; identical ones (same title) stay distinct recordings.
      const firstHalf = await imported(enterpriseId, file.slice(0, 20))
      assert.deepEqual(firstHalf.summary, { imported: 20, skipped: 0 })
      const whole = await imported(enterpriseId, file)
      assert.deepEqual(whole.summary, { imported: 20, skipped: 20 })
      assert.deepEqual(whole.progress.at(-1), { progress: 40, total: 40 })
      assert.equal(await countRecordings(enterpriseId), 40)
      const again = await imported(enterpriseId, file)
      assert.deepEqual(again.summary, { imported: 0, skipped: 40 })
      assert.equal(await countRecordings(enterpriseId), 40)

      // One delivery per part stored, none for a skipped line.
      const deliveries = await deliveriesOf(enterpriseId)
      const audioReady = [...deliveries].filter(([key]) => key.endsWith(' recording.audio_ready'))
      const transcriptReady = [...deliveries].filter(([key]) => key.endsWith(' recording.transcript_ready'))
      assert.equal(audioReady.length, 40)
      assert.equal(transcriptReady.length, 10)
      assert.ok(
        [...deliveries.values()].every((n) => n === 1),
        'no delivery is created twice',
      )
    })

    test('a conflicting line is refused in the validation pass, before anything is written', async () => {
      const enterpriseId = await pushingEnterprise('Conflicted')
      const stored = [
        line('con-1'),
        line('con-2', { transcript }),
        line('con-3'),
        line('con-4', { recordedAt: '2026-05-01T07:00:00Z' }),
      ]
      assert.deepEqual((await imported(enterpriseId, stored)).summary, { imported: 4, skipped: 0 })
      const before = await deliveriesOf(enterpriseId)

      const msg = await refused(
        enterpriseId,
        [
          line('con-new-1'),
          line('con-1', { title: 'renamed' }),
          line('con-2'),
          line('con-3', { recordedAt: '2026-05-01T09:00:01+02:00', recordDuration: 4 }),
          // The same instant written with another offset is the same content.
          line('con-4', { recordedAt: '2026-05-01T09:00:00+02:00' }),
          line('con-new-2'),
        ].join('\n'),
      )
      assert.equal(
        msg,
        REFUSED +
          'line 2: audioId "con-1" already exists with a different title\n' +
          'line 3: audioId "con-2" already exists with a different transcript (the line has none)\n' +
          'line 4: audioId "con-3" already exists with a different recordedAt, recordDuration',
      )
      assert.equal(await countRecordings(enterpriseId), 4)
      assert.deepEqual(await deliveriesOf(enterpriseId), before)
      const [row] = await platform.context.db.query<{ title: string }>(
        'SELECT title FROM recordings WHERE audio_id = $1',
        ['con-1'],
      )
      assert.equal(row?.title, 'imported con-1')

      const changedTranscript = await refused(
        enterpriseId,
        line('con-2', { transcript: { ...transcript, transcriptText: 'hello' } }),
      )
      assert.match(changedTranscript, /line 1: audioId "con-2" already exists with a different transcript$/)
    })

    test('a line adding a transcript to a stored recording attaches it and counts as imported', async () => {
      const enterpriseId = await pushingEnterprise('Transcribed')
      const anonymous = line(undefined, { title: 'no audioId' })
      assert.deepEqual((await imported(enterpriseId, [line('tr-1'), line('tr-2'), anonymous])).summary, {
        imported: 3,
        skipped: 0,
      })
      const withTranscripts = [
        line('tr-1', { transcript }),
        line('tr-2'),
        line(undefined, { title: 'no audioId', transcript: { ...transcript, transcriptId: 78 } }),
      ]
      assert.deepEqual((await imported(enterpriseId, withTranscripts)).summary, { imported: 2, skipped: 1 })
      assert.equal(await countRecordings(enterpriseId), 3, 'attached, not added')

      const rows = await platform.context.db.query<{ audio_id: string; transcript_id: number | null }>(
        'SELECT audio_id, transcript_id FROM recordings WHERE enterprise_id = $1 ORDER BY transcript_id',
        [enterpriseId],
      )
      assert.deepEqual(
        rows.map((row) => row.transcript_id),
        [77, 78, null],
      )
      const anonymousId = rows[1]?.audio_id as string
      const deliveries = await deliveriesOf(enterpriseId)
      assert.equal(deliveries.get('tr-1 recording.transcript_ready'), 1)
      assert.equal(deliveries.get(`${anonymousId} recording.transcript_ready`), 1)
      assert.equal(deliveries.get('tr-2 recording.transcript_ready'), undefined)
      assert.deepEqual([...deliveries.values()], [1, 1, 1, 1, 1], 'three audio_ready, two transcript_ready')

      assert.deepEqual((await imported(enterpriseId, withTranscripts)).summary, { imported: 0, skipped: 3 })
    })

    test('a body over EARSHOT_ADMIN_BODY_LIMIT is refused with 4130, sent whole or streamed', async () => {
      const small = await startTestPlatform(backend, { adminBodyLimitBytes: 4096, pushDispatch: false })
      try {
        const { enterpriseId } = await createPartner(small, 'Limited')
        const lines = Array.from({ length: 60 }, (_, i) => line(`lim-${i}`))
        const body = `${lines.join('\n')}\n`
        assert.ok(body.length > 4096)
        async function* streamed(): AsyncGenerator<Uint8Array> {
          for (const each of lines) yield Buffer.from(`${each}\n`)
        }
        for (const sent of [body, streamed()]) {
          const response = await post(small, enterpriseId, sent)
          assert.equal(response.status, 413)
          assert.deepEqual(
            [((await response.json()) as Refusal).code, await countIn(small, enterpriseId)],
            [4130, 0],
          )
        }
        const fits = lines.slice(0, 20).join('\n')
        assert.ok(fits.length <= 4096)
        const accepted = await post(small, enterpriseId, fits)
        assert.match(await accepted.text(), /\{"imported":20,"skipped":0\}\n$/)
      } finally {
        await small.stop()
      }
    })

    test('an unknown enterprise is 4040, a JSON body is 4150', async () => {
      const unknown = await post(platform, 999_999, line('u-1'))
      assert.equal(unknown.status, 404)
      assert.equal(((await unknown.json()) as Refusal).code, 4040)
      const { enterpriseId } = await createPartner(platform, 'Json Sender')
      const asJson = await admin<Refusal>(
        platform,
        'POST',
        `/enterprises/${enterpriseId}/recordings/import`,
        {
          audioId: 'j-1',
        },
      )
      assert.equal(asJson.status, 415)
      assert.equal(asJson.body.code, 4150)
    })
  })
}

async function countIn(platform: TestPlatform, enterpriseId: number): Promise<number> {
  const [row] = await platform.context.db.query<{ n: number }>(
    'SELECT count(*) AS n FROM recordings WHERE enterprise_id = $1',
    [enterpriseId],
  )
  return row?.n ?? -1
}

describe('JSON Lines import on PGlite', { timeout: 180_000 }, () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startTestPlatform('pglite')
  })
  after(async () => {
    await platform?.stop()
  })

  /** An import of `total` lines without audioIds, and the NDJSON lines of its answer as they come. */
  async function startImport(enterpriseId: number, total: number, signal?: AbortSignal) {
    const file = Array.from({ length: total }, (_, i) =>
      JSON.stringify({
        deviceUid: `busy-${i % 7}`,
        title: `busy ${i}`,
        recordedAt: '2026-06-01T00:00:00Z',
        denoiseUrl: `https://cdn.example/busy/${i}.mp3`,
        recordDuration: i,
      }),
    ).join('\n')
    const response = await post(platform, enterpriseId, file, signal)
    assert.equal(response.status, 200)
    return { file, answer: ndjsonLines(response.body as AsyncIterable<Uint8Array>) }
  }

  async function* ndjsonLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<Record<string, unknown>> {
    let pending = ''
    for await (const chunk of body) {
      pending += Buffer.from(chunk).toString()
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
        yield JSON.parse(pending.slice(0, end))
        pending = pending.slice(end + 1)
      }
    }
  }

  const committedSome = (line: Record<string, unknown>) =>
    typeof line.progress === 'number' && line.progress > 0

  test('the partner API answers while a large import is being committed', async () => {
    const partner = await createPartner(platform, 'Busy')
    const total = 30_000
    const { answer } = await startImport(partner.enterpriseId, total)

    // Read the progress lines; once one shows a committed chunk, ask the partner API.
    let finished = false
    let committing: () => void = () => {}
    const firstChunkCommitted = new Promise<void>((resolve) => {
      committing = resolve
    })
    const reading = (async () => {
      const lines: Record<string, unknown>[] = []
      for await (const line of answer) {
        lines.push(line)
        if (committedSome(line)) committing()
        if (!('progress' in line)) finished = true
      }
      return lines
    })()

    await firstChunkCommitted
    const [health, query] = await Promise.all([
      fetch(`${platform.partnerUrl}/healthz`).then((reply) => ({ status: reply.status, finished })),
      partner
        .call('/openapi/v1/audios', { deviceUid: 'busy-0', size: 1 })
        .then((reply) => ({ reply, finished })),
    ])
    assert.deepEqual(health, { status: 200, finished: false })
    assert.equal(query.reply.body.code, 2000)
    assert.equal(query.finished, false, 'the sealed query was answered before the import finished')
    const seen = (query.reply.plaintext?.total as number | undefined) ?? -1
    assert.ok(seen > 0 && seen <= Math.ceil(total / 7), `the query saw the chunks committed so far (${seen})`)

    const lines = await reading
    assert.deepEqual(lines.at(-1), { imported: total, skipped: 0 })
    assert.ok(lines.length > 3, 'progress after every chunk')
  })

  test('a client going away stops the import between chunks; the same file again completes it', async () => {
    const { enterpriseId } = await createPartner(platform, 'Impatient')
    const total = 10_000
    const abort = new AbortController()
    const { file, answer } = await startImport(enterpriseId, total, abort.signal)
    for await (const line of answer) {
      if (committedSome(line)) break
    }
    abort.abort()

    // Sent at once: what the first import still commits before it notices is skipped here, or is
    // found stored when this one's chunk is judged again inside its transaction.
    const again = await post(platform, enterpriseId, file)
    const summary = JSON.parse((await again.text()).trim().split('\n').at(-1) as string)
    assert.ok(summary.skipped >= 500, `the first chunks stay committed (${JSON.stringify(summary)})`)
    assert.ok(summary.imported > 0, `the first import stopped before the end (${JSON.stringify(summary)})`)
    assert.equal(summary.imported + summary.skipped, total)
    assert.equal(await countIn(platform, enterpriseId), total)
  })
})
