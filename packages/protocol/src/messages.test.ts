import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Type from 'typebox'
import { InvalidParameterError } from './errors.js'
import { messageParser, RULE, UNKNOWN_FIELD_RULE } from './message-parser.js'
import {
  AccessToken,
  CallbackPlaintext,
  ChangesRequest,
  EnvelopeSchema,
  isTranscriptData,
  MAX_ENTERPRISE_ID,
  MAX_PAGE,
  PushEvent,
  RecordingFilter,
  RecordingList,
  readIssuedAt,
  TokenPlaintext,
  TokenPlaintextSchema,
} from './messages.js'

function refusal(fn: () => unknown): InvalidParameterError {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof InvalidParameterError, `expected InvalidParameterError, got ${error}`)
    assert.equal(error.responseCode, 4001)
    return error
  }
  assert.fail('expected a refusal')
}

const transcriptData = {
  deviceUid: 'DEV-1',
  title: 'Standup',
  recordedAt: '2026-11-21T07:00:00.000Z',
  transcriptId: 901,
  transcriptText: 'hello world',
  transcriptSentences: '[{"text":"hello world","beginTime":0,"endTime":1200}]',
  durationMs: 1200,
  wordsCount: 2,
}
const audioData = {
  deviceUid: 'DEV-1',
  title: 'Standup',
  recordedAt: '2026-11-21T07:00:00.123456Z',
  denoiseUrl: 'https://cdn.example/a.mp3',
  recordDuration: 1200,
}

describe('RecordingFilter', { timeout: 10_000 }, () => {
  test('every field is optional; page and size default to 1 and 20', () => {
    assert.deepEqual(RecordingFilter.parse({}), { page: 1, size: 20 })
  })

  test('size 1 and 100 are accepted, 0 and 101 refused naming size', () => {
    assert.equal(RecordingFilter.parse({ size: 1 }).size, 1)
    assert.equal(RecordingFilter.parse({ size: 100 }).size, 100)
    assert.match(refusal(() => RecordingFilter.parse({ size: 0 })).message, /^size: /)
    assert.match(refusal(() => RecordingFilter.parse({ size: 101 })).message, /^size: must be <= 100/)
    assert.equal(refusal(() => RecordingFilter.parse({ size: 20.5 })).field, 'size')
    assert.equal(refusal(() => RecordingFilter.parse({ page: 0 })).field, 'page')
    assert.equal(refusal(() => RecordingFilter.parse({ page: '2' })).field, 'page')
  })

  test('an unknown field is refused by name', () => {
    const error = refusal(() => RecordingFilter.parse({ deviceUID: 'x' }))
    assert.equal(error.field, 'deviceUID')
    assert.match(error.message, /deviceUID: is not a known field/)
  })

  test('times need an explicit offset and must exist', () => {
    assert.doesNotThrow(() =>
      RecordingFilter.parse({ startTime: '2026-11-01T00:00:00+08:00', endTime: '2026-11-02T00:00:00Z' }),
    )
    for (const bad of [
      '2026-11-01T00:00:00',
      '2026-11-01',
      '2026-02-30T00:00:00Z',
      '2026-11-01T24:00:00Z',
      'yesterday',
    ]) {
      const error = refusal(() => RecordingFilter.parse({ startTime: bad }))
      assert.equal(error.field, 'startTime', bad)
      assert.match(error.message, /explicit offset/)
    }
    assert.equal(
      refusal(() => RecordingFilter.parse({ endTime: '2026-11-01T00:00:00+25:00' })).field,
      'endTime',
    )
  })

  test('startTime after endTime is refused; equal bounds are allowed', () => {
    const error = refusal(() =>
      RecordingFilter.parse({ startTime: '2026-11-02T00:00:00Z', endTime: '2026-11-01T00:00:00Z' }),
    )
    assert.match(error.message, /startTime: must not be after endTime/)
    // The same instant written with two offsets is not "after".
    assert.doesNotThrow(() =>
      RecordingFilter.parse({ startTime: '2026-11-01T08:00:00+08:00', endTime: '2026-11-01T00:00:00Z' }),
    )
  })

  test('identifiers cannot hold U+0000', () => {
    assert.match(
      refusal(() => RecordingFilter.parse({ deviceUid: 'a\u0000b' })).message,
      /^deviceUid: must not contain the character U\+0000/,
    )
    assert.equal(refusal(() => CallbackPlaintext.parse({ audioId: '\u0000' })).field, 'audioId')
  })

  test('the body must be an object', () => {
    refusal(() => RecordingFilter.parse([]))
  })
})

describe('other messages', { timeout: 10_000 }, () => {
  test('callback needs audioId and nothing else', () => {
    assert.deepEqual(CallbackPlaintext.parse({ audioId: 'aud_1' }), { audioId: 'aud_1' })
    assert.match(refusal(() => CallbackPlaintext.parse({})).message, /^audioId: is required$/)
    assert.equal(refusal(() => CallbackPlaintext.parse({ audioId: '' })).field, 'audioId')
    assert.equal(refusal(() => CallbackPlaintext.parse({ audioId: 'a', eventId: 'e' })).field, 'eventId')
  })

  test('token plaintext may be empty', () => {
    assert.deepEqual(TokenPlaintext.parse({}), {})
    assert.equal(refusal(() => TokenPlaintext.parse({ enterpriseId: '1' })).field, 'enterpriseId')
  })

  test('access token has tokenType Bearer', () => {
    assert.doesNotThrow(() => AccessToken.parse({ accessToken: 't', expiresIn: 7200, tokenType: 'Bearer' }))
    assert.equal(
      refusal(() => AccessToken.parse({ accessToken: 't', expiresIn: 7200, tokenType: 'bearer' })).field,
      'tokenType',
    )
  })

  test('a recording list carries both field sets, with types as they appear', () => {
    const list = RecordingList.parse({
      specVersion: '1',
      page: 1,
      size: 20,
      total: 2,
      items: [
        { audioId: 'a2', data: transcriptData },
        { audioId: 'a1', data: audioData },
      ],
    })
    assert.equal(isTranscriptData(list.items[0]?.data as never), true)
    assert.equal(isTranscriptData(list.items[1]?.data as never), false)
    const wrongType = { ...transcriptData, transcriptSentences: [{ text: 'x', beginTime: 0, endTime: 1 }] }
    const error = refusal(() =>
      RecordingList.parse({
        specVersion: '1',
        page: 1,
        size: 20,
        total: 1,
        items: [{ audioId: 'a', data: wrongType }],
      }),
    )
    assert.match(error.field, /^items\[0\]\.data/)
  })

  test('push event of both kinds', () => {
    const base = { eventId: 'evt-1', audioId: 'a1', occurredAt: '2026-11-21T08:00:00.000Z' }
    assert.doesNotThrow(() =>
      PushEvent.parse({ ...base, eventType: 'recording.audio_ready', data: audioData }),
    )
    assert.doesNotThrow(() =>
      PushEvent.parse({ ...base, eventType: 'recording.transcript_ready', data: transcriptData }),
    )
    assert.doesNotThrow(() => PushEvent.parse({ ...base, eventType: 'recording.deleted', data: {} }))
    // A deletion's data is open to fields a later version adds, like every answer's.
    assert.doesNotThrow(() =>
      PushEvent.parse({ ...base, eventType: 'recording.deleted', data: { reason: 'x' } }),
    )
    // Each kind is checked in its own form, so a refusal names the field at fault, not the eventType.
    assert.equal(
      refusal(() => PushEvent.parse({ ...base, eventType: 'recording.audio_ready', data: {} })).field,
      'data.deviceUid',
    )
    assert.equal(
      refusal(() => PushEvent.parse({ ...base, eventType: 'recording.moved', data: {} })).field,
      'eventType',
    )
    assert.equal(
      refusal(() =>
        PushEvent.parse({
          ...base,
          occurredAt: '2026-02-30T00:00:00Z',
          eventType: 'recording.audio_ready',
          data: audioData,
        }),
      ).field,
      'occurredAt',
    )
  })
})

describe('issuedAt', { timeout: 10_000 }, () => {
  test('every request plaintext may carry it, in whole seconds from 0 to 2^32 − 1', () => {
    const issuedAt = 1_793_491_200
    assert.equal(RecordingFilter.parse({ issuedAt }).issuedAt, issuedAt)
    assert.equal(ChangesRequest.parse({ issuedAt }).size, 100)
    assert.deepEqual(CallbackPlaintext.parse({ audioId: 'a', issuedAt }), { audioId: 'a', issuedAt })
    assert.deepEqual(TokenPlaintext.parse({ issuedAt }), { issuedAt })
    assert.equal(readIssuedAt({ issuedAt: 0 }), 0)
    assert.equal(readIssuedAt({ issuedAt: 2 ** 32 - 1 }), 2 ** 32 - 1)
    assert.equal(readIssuedAt({ size: 3 }), undefined)
  })

  test('a malformed one is refused naming it: not an integer, negative, or milliseconds', () => {
    for (const issuedAt of [1.5, -1, 2 ** 32, 1_793_491_200_000, '1793491200', null]) {
      assert.equal(refusal(() => readIssuedAt({ issuedAt })).field, 'issuedAt')
      assert.equal(refusal(() => RecordingFilter.parse({ issuedAt })).field, 'issuedAt')
      assert.match(
        refusal(() => CallbackPlaintext.parse({ audioId: 'a', issuedAt })).message,
        /^issuedAt: must be an integer number of seconds/,
      )
    }
  })
})

describe('integers stay within what stores them', { timeout: 10_000 }, () => {
  test('page and size are integers up to 2^31 − 1; 2^31, 2^63 and 1e300 are refused naming the field', () => {
    assert.equal(MAX_PAGE, 2 ** 31 - 1)
    assert.equal(RecordingFilter.parse({ page: 2 ** 31 - 1 }).page, 2 ** 31 - 1)
    for (const huge of [2 ** 31, 2 ** 53, 2 ** 63, 1e300]) {
      const page = refusal(() => RecordingFilter.parse({ page: huge }))
      assert.equal(page.field, 'page', String(huge))
      assert.match(page.message, /^page: must be <= 2147483647$/)
      const size = refusal(() => RecordingFilter.parse({ size: huge }))
      assert.equal(size.field, 'size', String(huge))
      assert.match(size.message, /^size: must be <= 100$/)
    }
    // JSON.parse reads 1e400 as Infinity, which is no integer.
    assert.equal(refusal(() => RecordingFilter.parse(JSON.parse('{"page":1e400}'))).field, 'page')
    assert.equal(refusal(() => RecordingFilter.parse({ page: 2 ** 31 - 0.5 })).field, 'page')
  })

  test('the recording list holds the same page bound', () => {
    const list = { specVersion: '1', page: 2 ** 31 - 1, size: 20, total: 0, items: [] }
    assert.equal(RecordingList.parse(list).page, 2 ** 31 - 1)
    assert.equal(refusal(() => RecordingList.parse({ ...list, page: 2 ** 31 })).field, 'page')
  })

  test('an enterpriseId in the token plaintext is a safe integer: 2^53 − 1 is fine, 2^53 and 1e300 are refused', () => {
    assert.equal(MAX_ENTERPRISE_ID, 2 ** 53 - 1)
    assert.deepEqual(TokenPlaintext.parse({ enterpriseId: 2 ** 53 - 1 }), { enterpriseId: 2 ** 53 - 1 })
    for (const huge of [2 ** 53, 2 ** 63, 1e300]) {
      const error = refusal(() => TokenPlaintext.parse({ enterpriseId: huge }))
      assert.equal(error.field, 'enterpriseId', String(huge))
      assert.match(error.message, /^enterpriseId: must be <= 9007199254740991$/)
    }
    assert.equal(refusal(() => TokenPlaintext.parse({ enterpriseId: 0 })).field, 'enterpriseId')
  })

  test('the envelope and token request schemas document the same bounds', () => {
    const maximum = (schema: unknown) => (schema as { maximum?: number }).maximum
    assert.equal(maximum(EnvelopeSchema.properties.keyVersion), 2 ** 31 - 1)
    assert.equal(maximum(TokenPlaintextSchema.properties.enterpriseId), 2 ** 53 - 1)
  })
})

describe('one time precision: microseconds', { timeout: 10_000 }, () => {
  test('6 fractional digits are accepted, 7 or more refused naming the field', () => {
    assert.doesNotThrow(() => RecordingFilter.parse({ startTime: '2026-03-01T10:00:00.123456Z' }))
    assert.doesNotThrow(() => RecordingFilter.parse({ endTime: '2026-03-01T10:00:00.000001+08:00' }))
    for (const field of ['startTime', 'endTime'] as const) {
      for (const text of ['2026-03-01T10:00:00.1234567Z', '2026-03-01T09:59:59.999999999Z']) {
        const error = refusal(() => RecordingFilter.parse({ [field]: text }))
        assert.equal(error.field, field, text)
        assert.match(error.message, /at most 6 fractional digits/)
      }
    }
    const error = refusal(() =>
      PushEvent.parse({
        eventId: 'e',
        audioId: 'a',
        occurredAt: '2026-03-01T10:00:00.0000001Z',
        eventType: 'recording.audio_ready',
        data: audioData,
      }),
    )
    assert.equal(error.field, 'occurredAt')
  })

  test('startTime after endTime is refused to the microsecond', () => {
    // 1 µs after: the same millisecond, so a comparison in milliseconds would let it through.
    const error = refusal(() =>
      RecordingFilter.parse({ startTime: '2026-03-01T10:00:00.000001Z', endTime: '2026-03-01T10:00:00Z' }),
    )
    assert.match(error.message, /^startTime: must not be after endTime$/)
    assert.equal(
      refusal(() =>
        RecordingFilter.parse({
          startTime: '2026-03-01T18:00:00.000124+08:00',
          endTime: '2026-03-01T10:00:00.000123Z',
        }),
      ).field,
      'startTime',
    )
    // 0.8 µs after cannot be written at all: it needs a seventh digit.
    const finer = refusal(() =>
      RecordingFilter.parse({ startTime: '2026-03-01T10:00:00.0000008Z', endTime: '2026-03-01T10:00:00Z' }),
    )
    assert.equal(finer.field, 'startTime')
    assert.match(finer.message, /at most 6 fractional digits/)
    // Equal to the microsecond, written two ways: not after.
    assert.doesNotThrow(() =>
      RecordingFilter.parse({
        startTime: '2026-03-01T18:00:00.000001+08:00',
        endTime: '2026-03-01T10:00:00.000001Z',
      }),
    )
    assert.doesNotThrow(() =>
      RecordingFilter.parse({ startTime: '2026-03-01T10:00:00.999999Z', endTime: '2026-03-01T10:00:01Z' }),
    )
  })
})

describe('rule annotations', { timeout: 10_000 }, () => {
  const parser = messageParser(
    Type.Object(
      {
        dryRun: Type.Optional(Type.Boolean({ [RULE]: 'must be true or false' })),
        url: Type.Optional(
          Type.Union([Type.String({ maxLength: 5 }), Type.Null()], { [RULE]: 'must be a URL or null' }),
        ),
        tags: Type.Optional(
          Type.Array(Type.Object({ name: Type.String({ minLength: 1, [RULE]: 'must not be empty' }) })),
        ),
        plain: Type.Optional(Type.Integer({ minimum: 1 })),
        needed: Type.String({ [RULE]: 'must be a string' }),
      },
      {
        additionalProperties: false,
        [UNKNOWN_FIELD_RULE]: 'is not a field here; give dryRun, url, tags, plain',
      },
    ),
  )

  test("a field's rule words every refusal of that field, through its branches and items", () => {
    assert.equal(
      refusal(() => parser.parse({ needed: '', dryRun: 'yes' })).message,
      'dryRun: must be true or false',
    )
    assert.equal(refusal(() => parser.parse({ needed: '', url: 42 })).message, 'url: must be a URL or null')
    assert.equal(
      refusal(() => parser.parse({ needed: '', url: 'x'.repeat(6) })).message,
      'url: must be a URL or null',
    )
    assert.equal(
      refusal(() => parser.parse({ needed: '', tags: [{ name: 'a' }, { name: '' }] })).message,
      'tags[1].name: must not be empty',
    )
  })

  test("an unknown field gets the object's rule; a missing one and an unannotated one keep the plain wording", () => {
    assert.equal(
      refusal(() => parser.parse({ needed: '', force: true })).message,
      'force: is not a field here; give dryRun, url, tags, plain',
    )
    assert.equal(refusal(() => parser.parse({})).message, 'needed: is required')
    assert.match(refusal(() => parser.parse({ needed: '', plain: 0 })).message, /^plain: must be >= 1$/)
    assert.match(
      refusal(() => parser.parse({ needed: '', tags: [{}] })).message,
      /^tags\[0\]\.name: is required$/,
    )
  })
})
