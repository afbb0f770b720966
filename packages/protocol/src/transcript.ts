import Type, { type Static } from 'typebox'
import { Compile } from 'typebox/compile'
import { InvalidParameterError } from './errors.js'

export const TranscriptSentenceSchema = Type.Object({
  text: Type.String(),
  beginTime: Type.Integer(),
  endTime: Type.Integer(),
})
export type TranscriptSentence = Static<typeof TranscriptSentenceSchema>

const sentences = Compile(Type.Array(TranscriptSentenceSchema))

/**
 * Parses the `transcriptSentences` field of a recording (a JSON array serialized into a string) into
 * typed sentences. Throws InvalidParameterError when the string is not such an array.
 */
export function parseTranscriptSentences(serialized: string): TranscriptSentence[] {
  let value: unknown
  try {
    value = JSON.parse(serialized)
  } catch {
    throw new InvalidParameterError('transcriptSentences', 'is not valid JSON')
  }
  if (!sentences.Check(value)) {
    throw new InvalidParameterError(
      'transcriptSentences',
      'must be a JSON array of {text: string, beginTime: integer, endTime: integer}',
    )
  }
  return value
}

/** The inverse of parseTranscriptSentences: the string form that travels in recording data. */
export function serializeTranscriptSentences(list: readonly TranscriptSentence[]): string {
  return JSON.stringify(list.map(({ text, beginTime, endTime }) => ({ text, beginTime, endTime })))
}
