import {
  CHECK_AUDIO_ID_PREFIX,
  checkInstant,
  component,
  InvalidParameterError,
  ISO_INSTANT_RULE,
  messageParser,
  NO_NUL_PATTERN,
  parseInstantMicros,
  serializeTranscriptSentences,
  TranscriptSentenceSchema,
} from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { STORED_AUDIO } from './recording-data.js'
import type { NewRecording } from './recording-store.js'

/*
 * Ingested sizes are bounded so that a query page of MAX_PAGE_SIZE (100) recordings, sealed, stays
 * under 16 MiB (the operator guide's "Limits"). Each recording's data is bounded by its fields: deviceUid,
 * title and denoiseUrl by their lengths (at most 6 bytes of JSON per character, `\u0001`), the
 * transcript part by its own size as JSON, measured as the query returns it (MAX_TRANSCRIPT_BYTES).
 * The worst case, 100 recordings at every limit, is checked by recording-input.test.ts:
 *
 *   data     ≤ 22 (keys) + 40 (recordedAt) + 770 (deviceUid) + 6,002 (title) + 114,688 (transcript) = 121,522 bytes
 *   item     ≤ data + 279 ({"audioId": 128 characters escaped, "data"})          = 121,801 bytes
 *   page     ≤ 100 items + 84 (specVersion, page, size, total)                 = 12,180,184 bytes
 *   sealed   = Base64, 4/3                                                      = 16,240,248 bytes
 *   response ≤ sealed + ~1 KiB (envelope fields, an eventId of 128 characters escaped, code, msg,
 *              requestId) < 16 MiB = 16,777,216 bytes
 */
/** Partners get recordedAt in UTC with a four-digit year (recording-data.ts): years 1 to 9999 in UTC. */
const RECORDED_AT_RANGE = {
  first: parseInstantMicros('0001-01-01T00:00:00Z') as bigint,
  last: parseInstantMicros('9999-12-31T23:59:59.999999Z') as bigint,
}

function checkRecordedAt(text: string | undefined): void {
  const micros = checkInstant('recordedAt', text)
  if (micros !== undefined && (micros < RECORDED_AT_RANGE.first || micros > RECORDED_AT_RANGE.last)) {
    throw new InvalidParameterError(
      'recordedAt',
      'must fall between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z once in UTC',
    )
  }
}

export const MAX_DEVICE_UID_LENGTH = 128
export const MAX_TITLE_LENGTH = 1000
export const MAX_DENOISE_URL_LENGTH = 4096
/** UTF-8 bytes of the transcript part as JSON, as the query returns it (see transcriptDataBytes). */
export const MAX_TRANSCRIPT_BYTES = 112 * 1024
/** Sentences of one transcript; fewer fit in MAX_TRANSCRIPT_BYTES anyway unless they are tiny. */
export const MAX_SENTENCES = 2000

const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const Text = (minLength: number, maxLength: number) =>
  Type.String({ minLength, maxLength, pattern: NO_NUL_PATTERN })

export const TranscriptPartSchema = Type.Object(
  {
    transcriptId: Count,
    // A character is at least one byte: a longer text can never fit, refused before it is measured.
    transcriptText: Text(0, MAX_TRANSCRIPT_BYTES),
    sentences: Type.Array(TranscriptSentenceSchema, { maxItems: MAX_SENTENCES }),
    durationMs: Count,
    wordsCount: Count,
  },
  {
    additionalProperties: false,
    ...component({
      name: 'TranscriptPart',
      description: "A recording's transcript part, at most 112 KiB as the query returns it.",
    }),
  },
)

/** One recording to ingest: a line of the JSON Lines import or an admin API body. */
export const RecordingInputSchema = Type.Object(
  {
    audioId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e]+$' })),
    deviceUid: Text(1, MAX_DEVICE_UID_LENGTH),
    title: Text(0, MAX_TITLE_LENGTH),
    recordedAt: Type.String({ description: ISO_INSTANT_RULE }),
    denoiseUrl: Type.Optional(Text(1, MAX_DENOISE_URL_LENGTH)),
    recordDuration: Type.Optional(Count),
    transcript: Type.Optional(TranscriptPartSchema),
  },
  {
    additionalProperties: false,
    ...component({
      name: 'RecordingInput',
      description:
        'One recording to ingest: an audio part (denoiseUrl and recordDuration), a transcript, or both. recordedAt is ISO-8601 with an explicit offset; an absent audioId is assigned.',
    }),
  },
)
export type RecordingInput = Static<typeof RecordingInputSchema>

export const RecordingInput = messageParser(RecordingInputSchema, (input) => {
  if (input.audioId?.startsWith(CHECK_AUDIO_ID_PREFIX)) {
    throw new InvalidParameterError(
      'audioId',
      `must not begin "${CHECK_AUDIO_ID_PREFIX}": the receiver check's pushes use those audioIds, and partners' receivers answer them without storing them`,
    )
  }
  checkRecordedAt(input.recordedAt)
  checkDenoiseUrl(input.denoiseUrl, true)
  if ((input.denoiseUrl === undefined) !== (input.recordDuration === undefined)) {
    throw new InvalidParameterError('denoiseUrl', 'the audio part needs both denoiseUrl and recordDuration')
  }
  if (input.denoiseUrl === undefined && input.transcript === undefined) {
    throw new InvalidParameterError(
      '',
      'a recording needs an audio part (denoiseUrl, recordDuration), a transcript, or both',
    )
  }
  if (input.transcript) checkTranscriptSize(input.transcript)
})

/**
 * A denoiseUrl given by an operator is an external URL, which partners are given as it is: an `https:` one,
 * or `http:` where EARSHOT_DENOISE_URL_ALLOW_HTTP allows it (`allowHttp`), never another scheme
 * (`javascript:`, `data:`). Stored audio is uploaded (PUT …/audio). The parsers check the scheme with
 * `allowHttp` true, the routes again with the configured value.
 */
export function checkDenoiseUrl(denoiseUrl: string | undefined, allowHttp: boolean): void {
  if (denoiseUrl === undefined) return
  if (denoiseUrl.startsWith(STORED_AUDIO)) {
    throw new InvalidParameterError(
      'denoiseUrl',
      `must be the audio's URL; "${STORED_AUDIO}" names audio Earshot stores: upload it with PUT …/recordings/:audioId/audio`,
    )
  }
  const scheme = /^(https?):\/\/[^\s/?#]/i.exec(denoiseUrl)?.[1]?.toLowerCase()
  if (!scheme || !URL.canParse(denoiseUrl) || (scheme === 'http' && !allowHttp)) {
    throw new InvalidParameterError(
      'denoiseUrl',
      allowHttp
        ? 'must be an https: or http: URL of the audio (https://…)'
        : 'must be an https: URL of the audio (https://…); http: only where EARSHOT_DENOISE_URL_ALLOW_HTTP is 1',
    )
  }
}

export const TranscriptPart = messageParser(TranscriptPartSchema, checkTranscriptSize)

/**
 * An operator's update of a recording: any of its fields but the audioId and the
 * transcript part (which has its own route); the audio part's two fields go together.
 */
export const RecordingUpdateSchema = Type.Object(
  {
    deviceUid: Type.Optional(Text(1, MAX_DEVICE_UID_LENGTH)),
    title: Type.Optional(Text(0, MAX_TITLE_LENGTH)),
    recordedAt: Type.Optional(Type.String({ description: ISO_INSTANT_RULE })),
    denoiseUrl: Type.Optional(Text(1, MAX_DENOISE_URL_LENGTH)),
    recordDuration: Type.Optional(Count),
  },
  {
    additionalProperties: false,
    ...component({
      name: 'RecordingUpdate',
      description:
        "An update of a recording's fields (at least one; the audio part's two together), an `updated` change.",
    }),
  },
)
export type RecordingUpdate = Static<typeof RecordingUpdateSchema>

export const RecordingUpdate = messageParser(RecordingUpdateSchema, (update) => {
  checkRecordedAt(update.recordedAt)
  checkDenoiseUrl(update.denoiseUrl, true)
  if (Object.keys(update).length === 0) {
    throw new InvalidParameterError(
      '',
      'name at least one of deviceUid, title, recordedAt, denoiseUrl, recordDuration',
    )
  }
})

/**
 * The UTF-8 bytes of a transcript part as JSON in the recording's data (set A):
 * `{"transcriptId", "transcriptText", "transcriptSentences" (the sentences serialized into a string),
 * "durationMs", "wordsCount"}`, exactly as the query and the push send it.
 */
export function transcriptDataBytes(transcript: Static<typeof TranscriptPartSchema>): number {
  return Buffer.byteLength(
    JSON.stringify({
      transcriptId: transcript.transcriptId,
      transcriptText: transcript.transcriptText,
      transcriptSentences: serializeTranscriptSentences(transcript.sentences),
      durationMs: transcript.durationMs,
      wordsCount: transcript.wordsCount,
    }),
  )
}

function checkTranscriptSize(transcript: Static<typeof TranscriptPartSchema>): void {
  const bytes = transcriptDataBytes(transcript)
  if (bytes > MAX_TRANSCRIPT_BYTES) {
    throw new InvalidParameterError(
      'transcript',
      `takes ${bytes} bytes as JSON in the recording's data (transcriptText and the sentences as ` +
        `transcriptSentences); at most ${MAX_TRANSCRIPT_BYTES} (112 KiB)`,
    )
  }
}

/** Validates an input and gives it an audioId when it has none. */
export function toNewRecording(value: unknown, newAudioId: () => string): NewRecording {
  const input = RecordingInput.parse(value)
  return { ...input, audioId: input.audioId ?? newAudioId() }
}

/** Platform-assigned audioIds: `aud_` and 16 URL-safe characters from 96 random bits. */
export function audioIdGenerator(randomBytes: (size: number) => Buffer): () => string {
  return () => platformAudioId(randomBytes(12))
}

/** A platform-assigned audioId from the first 96 bits of the given bytes (random, or a digest). */
export function platformAudioId(bits: Buffer): string {
  return `aud_${bits.subarray(0, 12).toString('base64url')}`
}
