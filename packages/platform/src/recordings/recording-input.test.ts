import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  generateSecret,
  InvalidParameterError,
  loadKey,
  MAX_EVENT_ID_LENGTH,
  MAX_KEY_VERSION,
  MAX_PAGE,
  MAX_PAGE_SIZE,
  type RecordingData,
  ResponseCode,
  SPEC_VERSION,
  seal,
  serializeTranscriptSentences,
  type TranscriptSentence,
} from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, adminRefusal, adminReply, createPartner } from '@earshot/test-kit/calls'
import fc from 'fast-check'
import { MAX_LINE_BYTES } from '../imports/json-lines-import.js'
import { recordingData } from './recording-data.js'
import {
  MAX_DENOISE_URL_LENGTH,
  MAX_DEVICE_UID_LENGTH,
  MAX_SENTENCES,
  MAX_TITLE_LENGTH,
  MAX_TRANSCRIPT_BYTES,
  RecordingInput,
  type RecordingInput as RecordingInputType,
  RecordingUpdate,
  TranscriptPart,
  transcriptDataBytes,
} from './recording-input.js'

/**
 * Ingested sizes (issue 10, row 10): no sealed query page of 100 recordings may exceed 16 MiB, so every
 * recording's data is bounded by its field limits and the transcript's size as JSON.
 */

const SIXTEEN_MIB = 16 * 1024 * 1024

type Transcript = NonNullable<RecordingInputType['transcript']>

/** A small transcript, with the given fields. */
function transcriptWith(fields: Partial<Transcript> = {}): Transcript {
  return {
    transcriptId: 7,
    transcriptText: '',
    sentences: [{ text: 'hello there', beginTime: 0, endTime: 1200 }],
    durationMs: 1200,
    wordsCount: 2,
    ...fields,
  }
}

/** A transcript whose size as JSON in the recording's data is exactly `bytes`, padded with 'a'. */
function transcriptOf(bytes: number, fields: Partial<Transcript> = {}): Transcript {
  const transcript = transcriptWith(fields)
  const missing = bytes - transcriptDataBytes(transcript)
  assert.ok(missing >= 0, `the base transcript already takes more than ${bytes} bytes`)
  return { ...transcript, transcriptText: transcript.transcriptText + 'a'.repeat(missing) }
}

const recording = (extra: Partial<RecordingInputType> = {}): RecordingInputType => ({
  deviceUid: 'dev-limits',
  title: 'At the limit',
  recordedAt: '2026-05-01T09:00:00+02:00',
  ...extra,
})

function refusal(run: () => unknown): InvalidParameterError {
  try {
    run()
  } catch (error) {
    assert.ok(error instanceof InvalidParameterError, String(error))
    return error
  }
  assert.fail('accepted')
}

describe('ingested sizes: the one ingestion schema', () => {
  test('a transcript of exactly MAX_TRANSCRIPT_BYTES as JSON is accepted, one byte more refused naming it', () => {
    const atLimit = transcriptOf(MAX_TRANSCRIPT_BYTES)
    assert.equal(transcriptDataBytes(atLimit), MAX_TRANSCRIPT_BYTES)
    assert.doesNotThrow(() => RecordingInput.parse(recording({ transcript: atLimit })))
    assert.doesNotThrow(() => TranscriptPart.parse(atLimit))

    const over = transcriptOf(MAX_TRANSCRIPT_BYTES + 1)
    for (const parse of [
      () => RecordingInput.parse(recording({ transcript: over })),
      () => TranscriptPart.parse(over),
    ]) {
      const error = refusal(parse)
      assert.equal(error.field, 'transcript')
      assert.equal(error.responseCode, ResponseCode.INVALID_PARAMETER)
      assert.match(
        error.message,
        new RegExp(`takes ${MAX_TRANSCRIPT_BYTES + 1} bytes .*at most ${MAX_TRANSCRIPT_BYTES}`),
      )
    }
  })

  test('the size is the JSON the query sends: escapes count, sentences are escaped twice', () => {
    const controls = 'x\u0001'.repeat(1000)
    const asQueried = (transcript: Transcript) =>
      Buffer.byteLength(
        JSON.stringify({
          transcriptId: transcript.transcriptId,
          transcriptText: transcript.transcriptText,
          transcriptSentences: serializeTranscriptSentences(transcript.sentences),
          durationMs: transcript.durationMs,
          wordsCount: transcript.wordsCount,
        }),
      )
    // A control character is six bytes of JSON (\u0001) in the text; seven in a sentence, whose
    // serialized string is escaped again (\\u0001).
    const inText = transcriptWith({ transcriptText: controls, sentences: [] })
    const inSentence = transcriptWith({ sentences: [{ text: controls, beginTime: 0, endTime: 1 }] })
    assert.equal(transcriptDataBytes(inText), asQueried(inText))
    assert.equal(transcriptDataBytes(inSentence), asQueried(inSentence))
    assert.ok(transcriptDataBytes(inText) > 7000)
    assert.ok(transcriptDataBytes(inSentence) > 8000)
  })

  test('recordedAt falls within years 1 to 9999 in UTC, as partners get it', () => {
    const at = (recordedAt: string) => ({
      ...recording({ recordedAt }),
      denoiseUrl: 'https://a.example/x',
      recordDuration: 1,
    })
    for (const edge of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999999Z', '0001-01-01T00:00:00-01:00']) {
      assert.doesNotThrow(() => RecordingInput.parse(at(edge)), edge)
    }
    for (const outside of ['0001-01-01T00:00:00+15:59', '9999-12-31T23:59:59.999999-00:01']) {
      const error = refusal(() => RecordingInput.parse(at(outside)))
      assert.equal(error.field, 'recordedAt', outside)
      assert.match(error.message, /between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59\.999999Z/)
      assert.equal(refusal(() => RecordingUpdate.parse({ recordedAt: outside })).field, 'recordedAt')
    }
  })

  test('readable field limits: lengths in characters, sentences in number', () => {
    const cases: [string, Partial<RecordingInputType>, Partial<RecordingInputType>][] = [
      [
        'deviceUid',
        { deviceUid: '🎧'.repeat(MAX_DEVICE_UID_LENGTH) },
        { deviceUid: 'd'.repeat(MAX_DEVICE_UID_LENGTH + 1) },
      ],
      ['title', { title: 'é'.repeat(MAX_TITLE_LENGTH) }, { title: 't'.repeat(MAX_TITLE_LENGTH + 1) }],
      [
        'denoiseUrl',
        { denoiseUrl: `https://cdn.example/${'u'.repeat(MAX_DENOISE_URL_LENGTH - 20)}`, recordDuration: 1 },
        { denoiseUrl: `https://cdn.example/${'u'.repeat(MAX_DENOISE_URL_LENGTH - 19)}`, recordDuration: 1 },
      ],
    ]
    const audio = { denoiseUrl: 'https://cdn.example/a.mp3', recordDuration: 3 }
    for (const [field, accepted, refused] of cases) {
      assert.doesNotThrow(() => RecordingInput.parse(recording({ ...audio, ...accepted })), field)
      const error = refusal(() => RecordingInput.parse(recording({ ...audio, ...refused })))
      assert.equal(error.field, field)
    }
    const sentence: TranscriptSentence = { text: '', beginTime: 0, endTime: 0 }
    const many = (count: number) => transcriptWith({ sentences: Array(count).fill(sentence) })
    assert.doesNotThrow(() => TranscriptPart.parse(many(MAX_SENTENCES)))
    assert.equal(refusal(() => TranscriptPart.parse(many(MAX_SENTENCES + 1))).field, 'sentences')
    assert.equal(
      refusal(() => RecordingInput.parse(recording({ transcript: many(MAX_SENTENCES + 1) }))).field,
      'transcript.sentences',
    )
    const longText = transcriptWith({ transcriptText: 'a'.repeat(MAX_TRANSCRIPT_BYTES + 1), sentences: [] })
    assert.equal(refusal(() => TranscriptPart.parse(longText)).field, 'transcriptText')
  })

  test('property: a page of 100 recordings at every limit, sealed, is under 16 MiB', (t) => {
    /** Characters of every JSON cost: 1, 2 (é, ", \), 3 (€), 4 (🎧, one code point) and 6 (\u0001, a lone surrogate). */
    const character = fc.constantFrom('a', 'é', '"', '\\', '€', '🎧', '\u0001', '\ud800')
    const printable = fc.constantFrom('a', '"', '\\')
    const integer = fc.constantFrom(0, Number.MAX_SAFE_INTEGER)
    const sentenceTime = fc.constantFrom(0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1e21, -1e300)
    const maximal = fc.record({
      deviceUid: character,
      title: character,
      audioId: printable,
      eventId: character,
      text: character,
      sentenceText: character,
      sentenceCount: fc.integer({ min: 0, max: 400 }),
      sentenceLength: fc.integer({ min: 0, max: 300 }),
      time: sentenceTime,
      id: integer,
    })
    const key = loadKey(generateSecret())
    let largest = 0
    fc.assert(
      fc.property(maximal, (shape) => {
        const sentences: TranscriptSentence[] = Array.from({ length: shape.sentenceCount }, () => ({
          text: shape.sentenceText.repeat(shape.sentenceLength),
          beginTime: shape.time,
          endTime: shape.time,
        }))
        const base: Transcript = {
          transcriptId: shape.id,
          transcriptText: '',
          sentences,
          durationMs: shape.id,
          wordsCount: shape.id,
        }
        // Fill the text with the drawn character while it fits, then pad to exactly the limit with 'a'.
        while (sentences.length > 0 && transcriptDataBytes(base) > MAX_TRANSCRIPT_BYTES) sentences.pop()
        const room = MAX_TRANSCRIPT_BYTES - transcriptDataBytes(base)
        const cost = Buffer.byteLength(JSON.stringify(shape.text)) - 2
        base.transcriptText = shape.text.repeat(Math.floor(room / cost))
        const transcript = transcriptOf(MAX_TRANSCRIPT_BYTES, base)
        const input = RecordingInput.parse(
          recording({
            deviceUid: shape.deviceUid.repeat(MAX_DEVICE_UID_LENGTH),
            title: shape.title.repeat(MAX_TITLE_LENGTH),
            transcript,
          }),
        )
        assert.equal(transcriptDataBytes(transcript), MAX_TRANSCRIPT_BYTES)
        const bytes = sealedPageBytes(key, shape.eventId.repeat(MAX_EVENT_ID_LENGTH), (index) => ({
          audioId: `${index}`.padStart(3, '0') + shape.audioId.repeat(125),
          data: queriedData(input),
        }))
        largest = Math.max(largest, bytes)
        assert.ok(bytes < SIXTEEN_MIB, `a sealed page of ${bytes} bytes`)
      }),
      { numRuns: 8 },
    )
    // The worst of all at once: every character six bytes of JSON, every audioId character two.
    const worst = RecordingInput.parse(
      recording({
        deviceUid: '\u0001'.repeat(MAX_DEVICE_UID_LENGTH),
        title: '\u0001'.repeat(MAX_TITLE_LENGTH),
        transcript: transcriptOf(MAX_TRANSCRIPT_BYTES, {
          transcriptId: Number.MAX_SAFE_INTEGER,
          durationMs: Number.MAX_SAFE_INTEGER,
          wordsCount: Number.MAX_SAFE_INTEGER,
        }),
      }),
    )
    const worstBytes = sealedPageBytes(key, '\u0001'.repeat(MAX_EVENT_ID_LENGTH), (index) => ({
      audioId: `${index}`.padStart(3, '0') + '"'.repeat(125),
      data: queriedData(worst),
    }))
    t.diagnostic(`largest sealed page: ${worstBytes} bytes (16 MiB = ${SIXTEEN_MIB})`)
    assert.ok(worstBytes >= largest)
    // The arithmetic of recording-input.ts: 16,240,248 bytes of Base64 and about 1 KiB around them.
    assert.ok(worstBytes <= 16_240_248 + 1024, `the worst sealed page takes ${worstBytes} bytes`)
    assert.ok(worstBytes < SIXTEEN_MIB)
  })
})

/** The recording's data as the query returns it (set A once it has a transcript). */
function queriedData(input: RecordingInputType): RecordingData {
  return recordingData({
    audio_id: 'unused',
    device_uid: input.deviceUid,
    title: input.title,
    recorded_at: new Date(input.recordedAt).toISOString(),
    denoise_url: input.denoiseUrl ?? null,
    record_duration: input.recordDuration ?? null,
    transcript_id: input.transcript?.transcriptId ?? null,
    transcript_text: input.transcript?.transcriptText ?? null,
    transcript_sentences: input.transcript ? serializeTranscriptSentences(input.transcript.sentences) : null,
    duration_ms: input.transcript?.durationMs ?? null,
    words_count: input.transcript?.wordsCount ?? null,
  })
}

/** The bytes of a whole query response whose page holds 100 items, as the platform sends it. */
function sealedPageBytes(
  key: ReturnType<typeof loadKey>,
  eventId: string,
  item: (index: number) => { audioId: string; data: RecordingData },
): number {
  const page = {
    specVersion: SPEC_VERSION,
    page: MAX_PAGE,
    size: MAX_PAGE_SIZE,
    total: Number.MAX_SAFE_INTEGER,
    items: Array.from({ length: MAX_PAGE_SIZE }, (_, index) => item(index)),
  }
  const body = {
    code: ResponseCode.OK,
    msg: 'success',
    requestId: randomUUID(),
    data: seal(key, MAX_KEY_VERSION, eventId, page),
  }
  return Buffer.byteLength(JSON.stringify(body))
}

for (const backend of testBackends) {
  describe(`ingested sizes through the admin API (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let enterpriseId: number

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      ;({ enterpriseId } = await createPartner(platform, 'Limits Co'))
    })
    after(async () => {
      await platform?.stop()
    })

    const atLimit = (audioId: string) =>
      recording({ audioId, transcript: transcriptOf(MAX_TRANSCRIPT_BYTES) })
    const overLimit = (audioId: string) =>
      recording({ audioId, transcript: transcriptOf(MAX_TRANSCRIPT_BYTES + 1) })

    async function importLines(lines: string[]): Promise<{ status: number; text: string }> {
      const response = await fetch(
        `${platform.adminUrl}/admin/v1/enterprises/${enterpriseId}/recordings/import`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
          body: lines.join('\n'),
        },
      )
      return { status: response.status, text: await response.text() }
    }

    async function stored(audioId: string): Promise<number> {
      const [row] = await platform.context.db.query<{ n: number }>(
        'SELECT count(*) AS n FROM recordings WHERE audio_id = $1',
        [audioId],
      )
      return row?.n ?? -1
    }

    test('single ingest: exactly at the limit 201, one byte over 4001 naming transcript and the limit', async () => {
      const params = { enterpriseId }
      const ok = await adminReply(platform, 'ingestRecording', { params, body: atLimit('lim-single') })
      assert.equal(ok.status, 201, JSON.stringify(ok.body))
      const refused = await adminRefusal(platform, 'ingestRecording', {
        params,
        body: overLimit('lim-single-over'),
      })
      assert.equal(refused.status, 400)
      assert.equal(refused.code, ResponseCode.INVALID_PARAMETER)
      assert.match(
        refused.msg,
        new RegExp(`^transcript: takes ${MAX_TRANSCRIPT_BYTES + 1} bytes .*at most ${MAX_TRANSCRIPT_BYTES}`),
      )
      assert.equal(await stored('lim-single-over'), 0)

      // The stored recording comes back with exactly the data measured.
      const [row] = await platform.context.db.query<{ text: string }>(
        'SELECT transcript_text AS text FROM recordings WHERE audio_id = $1',
        ['lim-single'],
      )
      assert.equal(row?.text, atLimit('x').transcript?.transcriptText)
    })

    test('transcript attach: exactly at the limit 200, one byte over 4001', async () => {
      const audio = { denoiseUrl: 'https://cdn.example/a.mp3', recordDuration: 3 }
      const created = await adminReply(platform, 'ingestRecording', {
        params: { enterpriseId },
        body: recording({ audioId: 'lim-attach', ...audio }),
      })
      assert.equal(created.status, 201)
      const params = { enterpriseId, audioId: 'lim-attach' }
      const refused = await adminRefusal(platform, 'attachTranscript', {
        params,
        body: transcriptOf(MAX_TRANSCRIPT_BYTES + 1),
      })
      assert.equal(refused.status, 400)
      assert.match(refused.msg, /^transcript: takes /)
      await adminCall(platform, 'attachTranscript', { params, body: transcriptOf(MAX_TRANSCRIPT_BYTES) })
    })

    test('import: a line exactly at the limit is imported; one byte over is refused with its line number', async () => {
      const refused = await importLines([
        JSON.stringify(atLimit('lim-imp-1')),
        JSON.stringify(overLimit('lim-imp-2')),
      ])
      assert.equal(refused.status, 400, refused.text)
      const { code, msg } = JSON.parse(refused.text) as { code: number; msg: string }
      assert.equal(code, ResponseCode.INVALID_PARAMETER)
      assert.match(
        msg,
        new RegExp(
          `^nothing was imported; fix these lines and import the file again:\nline 2: transcript: takes ${MAX_TRANSCRIPT_BYTES + 1} bytes .*at most ${MAX_TRANSCRIPT_BYTES}`,
        ),
      )
      assert.doesNotMatch(msg, /line 1/)
      assert.equal(await stored('lim-imp-1'), 0)

      const imported = await importLines([JSON.stringify(atLimit('lim-imp-1'))])
      assert.equal(imported.status, 200, imported.text)
      assert.deepEqual(JSON.parse(imported.text.trim().split('\n').at(-1) as string), {
        imported: 1,
        skipped: 0,
      })
      assert.equal(await stored('lim-imp-1'), 1)
    })

    test(`import: a line longer than ${MAX_LINE_BYTES} bytes is refused with its line number, unparsed`, async () => {
      const long = JSON.stringify(recording({ audioId: 'lim-long', title: ' '.repeat(MAX_LINE_BYTES) }))
      const refused = await importLines([JSON.stringify(atLimit('lim-long-1')), long])
      assert.equal(refused.status, 400)
      assert.match(JSON.parse(refused.text).msg, new RegExp(`line 2: is longer than ${MAX_LINE_BYTES} bytes`))
    })
  })
}
