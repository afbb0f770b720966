import {
  checkInstant,
  InvalidParameterError,
  ISO_INSTANT_RULE,
  messageParser,
  NO_NUL_PATTERN,
  TranscriptSentenceSchema,
} from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import type { NewRecording } from './recording-store.js'

const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const Text = (minLength: number, maxLength: number) =>
  Type.String({ minLength, maxLength, pattern: NO_NUL_PATTERN })

export const TranscriptPartSchema = Type.Object(
  {
    transcriptId: Count,
    transcriptText: Text(0, 1_000_000),
    sentences: Type.Array(TranscriptSentenceSchema, { maxItems: 100_000 }),
    durationMs: Count,
    wordsCount: Count,
  },
  { additionalProperties: false },
)

/** One recording to ingest: a line of the JSON Lines import (DESIGN.md §7) or an admin API body. */
export const RecordingInputSchema = Type.Object(
  {
    audioId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e]+$' })),
    deviceUid: Text(1, 128),
    title: Text(0, 1000),
    recordedAt: Type.String({ description: ISO_INSTANT_RULE }),
    denoiseUrl: Type.Optional(Text(1, 4096)),
    recordDuration: Type.Optional(Count),
    transcript: Type.Optional(TranscriptPartSchema),
  },
  { additionalProperties: false },
)
export type RecordingInput = Static<typeof RecordingInputSchema>

export const RecordingInput = messageParser(RecordingInputSchema, (input) => {
  checkInstant('recordedAt', input.recordedAt)
  if ((input.denoiseUrl === undefined) !== (input.recordDuration === undefined)) {
    throw new InvalidParameterError('denoiseUrl', 'the audio part needs both denoiseUrl and recordDuration')
  }
  if (input.denoiseUrl === undefined && input.transcript === undefined) {
    throw new InvalidParameterError(
      '',
      'a recording needs an audio part (denoiseUrl, recordDuration), a transcript, or both',
    )
  }
})

export const TranscriptPart = messageParser(TranscriptPartSchema)

/** Validates an input and gives it an audioId when it has none. */
export function toNewRecording(value: unknown, newAudioId: () => string): NewRecording {
  const input = RecordingInput.parse(value)
  return { ...input, audioId: input.audioId ?? newAudioId() }
}

/** Platform-assigned audioIds: `aud_` and 16 URL-safe characters from 96 random bits. */
export function audioIdGenerator(randomBytes: (size: number) => Buffer): () => string {
  return () => `aud_${randomBytes(12).toString('base64url')}`
}
