import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { InvalidParameterError } from './errors.js'
import { parseTranscriptSentences, serializeTranscriptSentences } from './transcript.js'

test('transcriptSentences round-trips between its string form and typed sentences', {
  timeout: 10_000,
}, () => {
  const sentence = fc
    .record({ text: fc.string(), beginTime: fc.nat(), endTime: fc.nat() })
    .map((s) => ({ ...s }))
  fc.assert(
    fc.property(fc.array(sentence), (sentences) => {
      assert.deepEqual(parseTranscriptSentences(serializeTranscriptSentences(sentences)), sentences)
    }),
  )
})

test('a string that is not an array of sentences is refused naming transcriptSentences', {
  timeout: 10_000,
}, () => {
  for (const bad of ['', 'not json', '{}', '[{"text":"x","beginTime":"0","endTime":1}]', '[{"text":"x"}]']) {
    assert.throws(
      () => parseTranscriptSentences(bad),
      (error: unknown) => error instanceof InvalidParameterError && error.field === 'transcriptSentences',
      bad,
    )
  }
})
