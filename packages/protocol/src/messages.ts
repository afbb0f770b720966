import Type, { type Static } from 'typebox'
import { component, PLAINTEXT_EXTENSION, SEALED_EXTENSION } from './component.js'
import { ALG, MAX_EVENT_ID_LENGTH, MAX_KEY_VERSION, SPEC_VERSION } from './envelope.js'
import { InvalidParameterError } from './errors.js'
import { PushEventType } from './event-type-names.js'
import { checkInstant, type MessageParser, messageParser, NO_NUL_PATTERN, RULE } from './message-parser.js'
import { ISO_INSTANT_PATTERN } from './time.js'

/*
 * Every message of the contract, as JSON Schema (TypeBox) with its static type. Field types are
 * exactly as they appear on the wire: integers are JSON integers and transcriptSentences is a string
 * holding JSON (see transcript.ts for the parsed form).
 */

const Id = (description: string) =>
  Type.String({ minLength: 1, maxLength: 128, pattern: NO_NUL_PATTERN, description })
const Count = (description: string) => Type.Integer({ minimum: 0, description })
const Instant = (description: string) => Type.String({ pattern: ISO_INSTANT_PATTERN, description })
const closed = { additionalProperties: false } as const
/** Declares a component that travels only sealed, as an envelope's plaintext. */
const plaintext = (name: string, description: string) => component({ name, description, sealed: true })

export const MAX_PAGE_SIZE = 100
export const DEFAULT_PAGE_SIZE = 20
/**
 * Integers on the wire are bounded by what stores them: a page number is a 32-bit integer (the
 * offset it makes, page × size, stays exact), an enterpriseId a PostgreSQL `bigint` read into a
 * JavaScript number, exact up to 2^53 − 1. Beyond the bound a field is refused naming it (4001),
 * never rounded nor sent to the database.
 */
export const MAX_PAGE = 2 ** 31 - 1
export const MAX_ENTERPRISE_ID = Number.MAX_SAFE_INTEGER
const EnterpriseId = (description: string) =>
  Type.Integer({ minimum: 1, maximum: MAX_ENTERPRISE_ID, description })

/** issuedAt above this (2^32 − 1 s, in 2106) is refused as malformed: milliseconds sent for seconds, say. */
export const MAX_ISSUED_AT = 2 ** 32 - 1
export const ISSUED_AT_RULE = `must be an integer number of seconds since the Unix epoch, from 0 to ${MAX_ISSUED_AT}`

/**
 * The field every sealed request's plaintext may carry: when the client sealed it. The platform refuses a
 * request sealed too long ago or too far ahead of its clock (4011), and keeps its nonce only that long.
 */
export const IssuedAtField = {
  issuedAt: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_ISSUED_AT,
      description:
        'when the client sealed the request, in whole seconds since the Unix epoch; refused (4011) when older than EARSHOT_REQUEST_MAX_AGE or over 60 s ahead of the platform clock',
      [RULE]: ISSUED_AT_RULE,
    }),
  ),
}

const ENVELOPE = `The encrypted envelope that carries every partner request body and every sealed answer's \`data\`. \`ciphertext\` is the AES-256-GCM encryption of a UTF-8 JSON object (the plaintext, a schema marked \`${SEALED_EXTENSION}\`) under the enterprise's 32-byte secret with \`nonce\` as the IV and no additional authenticated data; \`tag\` is the 16-byte authentication tag. \`nonce\`, \`ciphertext\` and \`tag\` are canonical standard Base64 (padding required). Seal every request afresh: a nonce already accepted under the same enterprise and keyVersion is refused (4090). An answer's envelope uses the request's keyVersion and echoes its eventId. Unknown extra fields are ignored. Which plaintext an envelope holds is named by its schema's \`${PLAINTEXT_EXTENSION}\`.`

/** The envelope (docs/protocol.md) (open() checks it by hand for speed; this schema documents it). */
export const EnvelopeSchema = Type.Object(
  {
    specVersion: Type.Literal(SPEC_VERSION),
    alg: Type.Literal(ALG),
    keyVersion: Type.Integer({
      minimum: 1,
      maximum: MAX_KEY_VERSION,
      description: 'a larger keyVersion is well-formed but unknown: open() refuses it as decryption_failed',
    }),
    eventId: Type.String({ minLength: 1, maxLength: MAX_EVENT_ID_LENGTH }),
    nonce: Type.String({ description: 'canonical Base64 of 12 bytes' }),
    ciphertext: Type.String({ description: 'canonical Base64' }),
    tag: Type.String({ description: 'canonical Base64 of 16 bytes' }),
  },
  component({ name: 'Envelope', description: ENVELOPE }),
)

/** The token request's plaintext may be {}; an enterpriseId inside must match the outer one. */
export const TokenPlaintextSchema = Type.Object(
  {
    enterpriseId: Type.Optional(EnterpriseId('the enterprise the token is for')),
    ...IssuedAtField,
  },
  plaintext(
    'TokenPlaintext',
    "The token request's plaintext; may be `{}`. An enterpriseId inside must equal the one beside the envelope (else 4012).",
  ),
)
export type TokenPlaintext = Static<typeof TokenPlaintextSchema>

/** The token request body is the envelope plus the enterpriseId in plaintext. */
export const TokenRequestSchema = Type.Intersect(
  [EnvelopeSchema, Type.Object({ enterpriseId: EnterpriseId('enterprise id (long)') })],
  component({
    name: 'TokenRequest',
    description:
      'The token request: an envelope with the enterpriseId beside its fields, in plaintext; the enterpriseId picks the key. Its ciphertext holds a TokenPlaintext (sealed).',
    plaintext: TokenPlaintextSchema,
  }),
)
export type TokenRequest = Static<typeof TokenRequestSchema>

/** The token response `data` (not encrypted). */
export const AccessTokenSchema = Type.Object(
  {
    accessToken: Type.String({ minLength: 1 }),
    expiresIn: Type.Integer({ minimum: 1, description: 'validity in seconds' }),
    tokenType: Type.Literal('Bearer'),
  },
  component({ name: 'AccessToken', description: "The token answer's data, not encrypted." }),
)
export type AccessToken = Static<typeof AccessTokenSchema>

/** The query filter: every field optional; startTime ≤ recordedAt < endTime. */
export const RecordingFilterSchema = Type.Object(
  {
    audioId: Type.Optional(Id('recording id')),
    deviceUid: Type.Optional(Id('device UID')),
    page: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: 'page number, default 1' }),
    ),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: 'rows per page, default 20' }),
    ),
    startTime: Type.Optional(Instant('inclusive lower bound on recordedAt')),
    endTime: Type.Optional(Instant('exclusive upper bound on recordedAt')),
    ...IssuedAtField,
  },
  {
    ...closed,
    ...plaintext(
      'RecordingFilter',
      'The query filter: every field optional; matches startTime <= recordedAt < endTime; startTime after endTime, a time without an offset and an unknown field are refused (4001).',
    ),
  },
)
export type RecordingFilter = Static<typeof RecordingFilterSchema>
/** A filter after defaults are applied. */
export type ResolvedRecordingFilter = RecordingFilter & { page: number; size: number }

const RecordedAt = Instant('when the device made the recording, in UTC: what startTime and endTime bound')

/** Set A (transcript form), returned once the recording's transcript exists. */
export const TranscriptRecordingDataSchema = Type.Object(
  {
    deviceUid: Type.String(),
    title: Type.String(),
    recordedAt: RecordedAt,
    transcriptId: Type.Integer(),
    transcriptText: Type.String(),
    transcriptSentences: Type.String({
      description: 'a JSON array of {text, beginTime, endTime}, serialized',
    }),
    durationMs: Count('duration in milliseconds'),
    wordsCount: Count('word count'),
    denoiseUrl: Type.Optional(Type.String({ description: 'the audio part, when the recording has one' })),
    recordDuration: Type.Optional(Count('recording duration, when the recording has an audio part')),
  },
  plaintext(
    'TranscriptRecordingData',
    "Set A (transcript form), a recording's data once its transcript exists. transcriptSentences is a JSON array of {text, beginTime, endTime} serialized into a string.",
  ),
)
export type TranscriptRecordingData = Static<typeof TranscriptRecordingDataSchema>

/** Set B (audio-file form), returned while the recording has only its audio part. */
export const AudioRecordingDataSchema = Type.Object(
  {
    deviceUid: Type.String(),
    title: Type.String(),
    recordedAt: RecordedAt,
    denoiseUrl: Type.String(),
    recordDuration: Count('recording duration'),
  },
  plaintext(
    'AudioRecordingData',
    "Set B (audio-file form), a recording's data while it has only its audio part.",
  ),
)
export type AudioRecordingData = Static<typeof AudioRecordingDataSchema>

export const RecordingDataSchema = Type.Union(
  [TranscriptRecordingDataSchema, AudioRecordingDataSchema],
  plaintext('RecordingData', "A recording's data: set A once its transcript exists, else set B."),
)
export type RecordingData = Static<typeof RecordingDataSchema>

export function isTranscriptData(data: RecordingData): data is TranscriptRecordingData {
  return 'transcriptId' in data
}

/** The plaintext of the query response `data`. */
export const RecordingListSchema = Type.Object(
  {
    specVersion: Type.Literal(SPEC_VERSION),
    page: Type.Integer({ minimum: 1, maximum: MAX_PAGE }),
    size: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE }),
    total: Count('number of all matching recordings'),
    items: Type.Array(Type.Object({ audioId: Type.String(), data: RecordingDataSchema })),
  },
  plaintext(
    'RecordingList',
    'A page of the query: newest first (recordedAt, then audioId, descending), stable across pages; total counts every match; a page past the end has no items and the true total.',
  ),
)
export type RecordingList = Static<typeof RecordingListSchema>

const ERASED_FIELD =
  'true: the partner erased this deleted recording (removed it and its audio after its recording.deleted push); only for a deleted recording it had. A plain receipt is no erasure confirmation'

/** The receipt callback's plaintext. */
export const CallbackPlaintextSchema = Type.Object(
  {
    audioId: Id('id of the received recording'),
    ...IssuedAtField,
    erased: Type.Optional(Type.Boolean({ description: ERASED_FIELD })),
  },
  {
    ...closed,
    ...plaintext(
      'CallbackPlaintext',
      'The receipt callback: the audioId of a recording the partner stored from a push, or (erased: true) of a deleted one it erased.',
    ),
  },
)
export type CallbackPlaintext = Static<typeof CallbackPlaintextSchema>

const pushEventHead = {
  eventId: Type.String({ minLength: 1, maxLength: MAX_EVENT_ID_LENGTH }),
  audioId: Type.String({ minLength: 1 }),
  occurredAt: Instant('when the recording part became available, or when it was deleted'),
}

/** The plaintext of a push of a recording part. */
export const RecordingPushEventSchema = Type.Object({
  ...pushEventHead,
  eventType: Type.Union([
    Type.Literal(PushEventType.AUDIO_READY),
    Type.Literal(PushEventType.TRANSCRIPT_READY),
    Type.Literal(PushEventType.UPDATED),
  ]),
  data: RecordingDataSchema,
})

/** The plaintext of a recording's deletion pushed; its data is `{}`, open to fields a later version adds. */
export const DeletionPushEventSchema = Type.Object({
  ...pushEventHead,
  eventType: Type.Literal(PushEventType.DELETED),
  data: Type.Object({}),
})

/** The plaintext of a push to the partner. */
export const PushEventSchema = Type.Union(
  [RecordingPushEventSchema, DeletionPushEventSchema],
  plaintext(
    'PushEvent',
    'What the platform pushes: one event per recording part made available, or per deletion (data `{}`).',
  ),
)
export type PushEvent = Static<typeof PushEventSchema>

/** The change feed's request plaintext. */
export const ChangesRequestSchema = Type.Object(
  {
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'opaque: a nextCursor as answered' }),
    ),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: 'changes per page, default 100' }),
    ),
    ...IssuedAtField,
  },
  {
    ...closed,
    ...plaintext(
      'ChangesRequest',
      'A change feed request: no cursor starts at the beginning; a malformed cursor is refused (4001).',
    ),
  },
)
export type ChangesRequest = Static<typeof ChangesRequestSchema>
export type ResolvedChangesRequest = { cursor: string | undefined; size: number }

export const ChangeKind = {
  CREATED: 'created',
  TRANSCRIPT_ADDED: 'transcript_added',
  UPDATED: 'updated',
  DELETED: 'deleted',
} as const
export type ChangeKind = (typeof ChangeKind)[keyof typeof ChangeKind]

/** One change of the feed; `data` is the recording's current data, absent once it is deleted. */
export const ChangeSchema = Type.Object(
  {
    seq: Type.Integer({
      minimum: 1,
      description: "the enterprise's own numbering: 1, 2, 3… with no gap, in the order of the feed",
    }),
    audioId: Type.String({ minLength: 1 }),
    change: Type.Union([
      Type.Literal(ChangeKind.CREATED),
      Type.Literal(ChangeKind.TRANSCRIPT_ADDED),
      Type.Literal(ChangeKind.UPDATED),
      Type.Literal(ChangeKind.DELETED),
    ]),
    at: Instant('when the change was made'),
    data: Type.Optional(RecordingDataSchema),
  },
  plaintext(
    'Change',
    "One change of the feed: data is the recording's current data, absent for `deleted` and for every earlier change of a recording deleted since.",
  ),
)
export type Change = Static<typeof ChangeSchema>

/** The plaintext of the change feed's response `data`. */
export const ChangePageSchema = Type.Object(
  {
    specVersion: Type.Literal(SPEC_VERSION),
    items: Type.Array(ChangeSchema),
    nextCursor: Type.String({ minLength: 1, description: 'where the next page starts; opaque' }),
    hasMore: Type.Boolean({
      description: 'more changes are ready now; false once caught up (a page stops early at about 1 MiB)',
    }),
    lagSeconds: Type.Optional(
      Type.Number({
        minimum: 0,
        description:
          'how long the oldest of your changes already committed but not yet in the feed has waited (an older transaction still running holds it back); 0 when none',
      }),
    ),
  },
  plaintext(
    'ChangePage',
    'A page of the change feed: seq increases strictly; pass nextCursor to read on; hasMore is false once caught up.',
  ),
)
export type ChangePage = Static<typeof ChangePageSchema>

/** Every response body. */
export const ResponseBodySchema = Type.Object({
  code: Type.Integer(),
  msg: Type.Optional(Type.String()),
  requestId: Type.Optional(Type.String()),
  data: Type.Optional(Type.Unknown()),
})
export type ResponseBody<Data = unknown> = { code: number; msg?: string; requestId?: string; data?: Data }

const recordingFilter = messageParser(RecordingFilterSchema, (filter) => {
  const start = checkInstant('startTime', filter.startTime)
  const end = checkInstant('endTime', filter.endTime)
  if (start !== undefined && end !== undefined && start > end) {
    throw new InvalidParameterError('startTime', 'must not be after endTime')
  }
})

export const TokenPlaintext = messageParser(TokenPlaintextSchema)
const issuedAtOnly = messageParser(Type.Object(IssuedAtField))
/** A sealed request's issuedAt, undefined when it has none; malformed, InvalidParameterError naming it. */
export function readIssuedAt(plaintext: Record<string, unknown>): number | undefined {
  if (!Object.hasOwn(plaintext, 'issuedAt')) return undefined
  return issuedAtOnly.parse({ issuedAt: plaintext.issuedAt }).issuedAt
}
export const AccessToken = messageParser(AccessTokenSchema)
export const RecordingList = messageParser(RecordingListSchema)
export const CallbackPlaintext = messageParser(CallbackPlaintextSchema)
const checkOccurredAt = (event: { occurredAt: string }) => {
  checkInstant('occurredAt', event.occurredAt)
}
const recordingPushEvent = messageParser(RecordingPushEventSchema, checkOccurredAt)
const deletionPushEvent = messageParser(DeletionPushEventSchema, checkOccurredAt)
export const PushEvent = {
  schema: PushEventSchema,
  /** Validates a push against the form its eventType names, so that a refusal names the field at fault. */
  parse(value: unknown): PushEvent {
    const deletion = (value as { eventType?: unknown } | null)?.eventType === PushEventType.DELETED
    return deletion ? deletionPushEvent.parse(value) : recordingPushEvent.parse(value)
  },
} satisfies MessageParser<PushEvent>
export const ChangePage = messageParser(ChangePageSchema)
const changesRequest = messageParser(ChangesRequestSchema)
export const ChangesRequest = {
  schema: ChangesRequestSchema,
  /** Validates a change feed request and applies the default size 100. */
  parse(value: unknown): ResolvedChangesRequest {
    const request = changesRequest.parse(value)
    return { cursor: request.cursor, size: request.size ?? MAX_PAGE_SIZE }
  },
} satisfies MessageParser<ResolvedChangesRequest>
export const RecordingFilter = {
  schema: RecordingFilterSchema,
  /** Validates a filter and applies the defaults page 1 and size 20. */
  parse(value: unknown): ResolvedRecordingFilter {
    const filter = recordingFilter.parse(value)
    return { ...filter, page: filter.page ?? 1, size: filter.size ?? DEFAULT_PAGE_SIZE }
  },
} satisfies MessageParser<ResolvedRecordingFilter>
