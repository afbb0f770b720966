import {
  AccessTokenSchema,
  AudioRecordingDataSchema,
  CallbackPlaintextSchema,
  ChangePageSchema,
  ChangeSchema,
  ChangesRequestSchema,
  EnvelopeSchema,
  MAX_ENTERPRISE_ID,
  PushEventSchema,
  RecordingDataSchema,
  RecordingFilterSchema,
  RecordingListSchema,
  ResponseCode,
  type ResponseCodeValue,
  TokenPlaintextSchema,
  TokenRequestSchema,
  TranscriptRecordingDataSchema,
} from '@earshot/protocol'
import type { TSchema } from 'typebox'
import {
  Components,
  errorBodySchema,
  type Json,
  jsonAnswer,
  jsonBody,
  PLAINTEXT,
  ref,
  refusals,
  responseCodeSchema,
  SEALED,
} from './openapi.js'

const SEALED_NOTE =
  "Sealed: this object never travels in the clear. It is the UTF-8 JSON plaintext of an envelope's `ciphertext` (AES-256-GCM under the enterprise's secret, no additional authenticated data)."

const ENVELOPE = `The encrypted envelope that carries every partner request body and every sealed answer's \`data\`. \`ciphertext\` is the AES-256-GCM encryption of a UTF-8 JSON object (the plaintext, a schema marked \`${SEALED}\`) under the enterprise's 32-byte secret with \`nonce\` as the IV and no additional authenticated data; \`tag\` is the 16-byte authentication tag. \`nonce\`, \`ciphertext\` and \`tag\` are canonical standard Base64 (padding required). Seal every request afresh: a nonce already accepted under the same enterprise and keyVersion is refused (4090). An answer's envelope uses the request's keyVersion and echoes its eventId. Unknown extra fields are ignored. Which plaintext an envelope holds is named by its schema's \`${PLAINTEXT}\`.`

const BEARER_CODES: ResponseCodeValue[] = [
  ResponseCode.INVALID_REQUEST,
  ResponseCode.INVALID_PARAMETER,
  ResponseCode.UNAUTHORIZED,
  ResponseCode.TOKEN_EXPIRED,
  ResponseCode.DECRYPTION_FAILED,
  ResponseCode.FORBIDDEN,
  ResponseCode.REPLAYED,
  ResponseCode.PAYLOAD_TOO_LARGE,
  ResponseCode.UNSUPPORTED_MEDIA_TYPE,
  ResponseCode.RATE_LIMITED,
  ResponseCode.INTERNAL_ERROR,
  ResponseCode.UNAVAILABLE,
]

/** The partner API (10) as an OpenAPI 3.1 document. */
export function partnerApiDocument(): Json {
  const components = new Components()
  const sealed = (name: string, schema: TSchema, description: string) =>
    components.name(name, schema, { description: `${description}\n\n${SEALED_NOTE}`, [SEALED]: true })
  const envelopeOf = (name: string, plaintext: string, description: string, base = 'BearerEnvelope') =>
    components.name(name, {
      allOf: [ref(base)],
      description: `${description} Its ciphertext holds a ${plaintext} (sealed).`,
      [PLAINTEXT]: `#/components/schemas/${plaintext}`,
    })

  components.name('Envelope', EnvelopeSchema, { description: ENVELOPE })
  components.name('TokenRequest', TokenRequestSchema, {
    description:
      'The token request: an envelope with the enterpriseId beside its fields, in plaintext; the enterpriseId picks the key. Its ciphertext holds a TokenPlaintext (sealed).',
    [PLAINTEXT]: '#/components/schemas/TokenPlaintext',
  })
  components.name('BearerEnvelope', {
    allOf: [
      ref('Envelope'),
      {
        type: 'object',
        properties: {
          enterpriseId: {
            type: 'integer',
            minimum: 1,
            maximum: MAX_ENTERPRISE_ID,
            description: "optional; when sent it must be the bearer token's enterprise (else 4012)",
          },
        },
      },
    ],
    description: 'An envelope sent with a bearer token.',
  })
  sealed(
    'TokenPlaintext',
    TokenPlaintextSchema,
    "The token request's plaintext; may be `{}`. An enterpriseId inside must equal the one beside the envelope (else 4012).",
  )
  sealed(
    'RecordingFilter',
    RecordingFilterSchema,
    'The query filter: every field optional; matches startTime <= recordedAt < endTime; startTime after endTime, a time without an offset and an unknown field are refused (4001).',
  )
  sealed(
    'TranscriptRecordingData',
    TranscriptRecordingDataSchema,
    "Set A (transcript form), a recording's data once its transcript exists. transcriptSentences is a JSON array of {text, beginTime, endTime} serialized into a string.",
  )
  sealed(
    'AudioRecordingData',
    AudioRecordingDataSchema,
    "Set B (audio-file form), a recording's data while it has only its audio part.",
  )
  sealed(
    'RecordingData',
    RecordingDataSchema,
    "A recording's data: set A once its transcript exists, else set B.",
  )
  sealed(
    'RecordingList',
    RecordingListSchema,
    'A page of the query: newest first (recordedAt, then audioId, descending), stable across pages; total counts every match; a page past the end has no items and the true total.',
  )
  sealed(
    'CallbackPlaintext',
    CallbackPlaintextSchema,
    'The receipt callback: the audioId of a recording the partner stored from a push.',
  )
  sealed(
    'ChangesRequest',
    ChangesRequestSchema,
    'A change feed request: no cursor starts at the beginning; a malformed cursor is refused (4001).',
  )
  sealed(
    'Change',
    ChangeSchema,
    "One change of the feed: data is the recording's current data, absent for `deleted` and for every earlier change of a recording deleted since.",
  )
  sealed(
    'ChangePage',
    ChangePageSchema,
    'A page of the change feed: seq increases strictly; pass nextCursor to read on; hasMore is false once caught up.',
  )
  sealed(
    'PushEvent',
    PushEventSchema,
    'What the platform pushes: one event per recording part made available, or per deletion (data `{}`).',
  )
  envelopeOf('SealedRecordingFilter', 'RecordingFilter', 'The query request body.')
  envelopeOf(
    'SealedRecordingList',
    'RecordingList',
    "The query answer's data, sealed under the request's key.",
    'Envelope',
  )
  envelopeOf('SealedCallbackPlaintext', 'CallbackPlaintext', 'The receipt callback request body.')
  envelopeOf('SealedChangesRequest', 'ChangesRequest', 'The change feed request body.')
  envelopeOf(
    'SealedChangePage',
    'ChangePage',
    "The change feed answer's data, sealed under the request's key.",
    'Envelope',
  )
  envelopeOf(
    'SealedPushEvent',
    'PushEvent',
    "A push's body, sealed under the enterprise's current key, eventId the event's.",
    'Envelope',
  )
  components.name('AccessToken', AccessTokenSchema, {
    description: "The token answer's data, not encrypted.",
  })
  components.name('ResponseCode', responseCodeSchema())
  components.name('ErrorBody', errorBodySchema())

  const answer = (description: string, data?: Json) =>
    jsonAnswer(description, {
      type: 'object',
      required: ['code', 'msg', 'requestId', ...(data ? ['data'] : [])],
      properties: {
        code: { type: 'integer', const: ResponseCode.OK },
        msg: { type: 'string', const: 'success' },
        requestId: { type: 'string' },
        ...(data && { data }),
      },
    })
  const bearer = [{ accessToken: [] }]
  const health = (status: string, description: string) => ({
    type: 'object',
    required: ['status'],
    properties: { status: { type: 'string', const: status } },
    description,
  })

  return {
    openapi: '3.1.0',
    info: {
      title: 'Earshot partner API',
      version: '1',
      description:
        "The partner-facing API of Earshot: a bearer token, the recordings query, the change feed and the receipt callback under /openapi/v1, and the platform's push to the partner (under webhooks). Every request body is an encrypted envelope (the Envelope schema); the JSON it carries is a schema marked `x-earshot-sealed`, named by the envelope's `x-earshot-plaintext`. Every answer is `{code, msg, requestId}` plus `data` on success; the codes are the ResponseCode schema, the HTTP status is code / 10.",
    },
    tags: [
      { name: 'authentication', description: 'Access tokens' },
      { name: 'recordings', description: 'The recordings query and the receipt callback' },
      { name: 'changes', description: 'The change feed' },
      { name: 'health', description: 'Probes for load balancers and orchestrators' },
    ],
    paths: {
      '/openapi/v1/token': {
        post: {
          operationId: 'issueToken',
          tags: ['authentication'],
          summary: 'Issue an access token',
          description:
            'Several tokens of one enterprise coexist; issuing one revokes none. A token is revoked when its enterprise is disabled or its keyVersion retired.',
          requestBody: jsonBody(ref('TokenRequest')),
          responses: {
            '200': answer('A token (data not encrypted)', ref('AccessToken')),
            ...refusals(
              BEARER_CODES.filter(
                (code) => code !== ResponseCode.UNAUTHORIZED && code !== ResponseCode.TOKEN_EXPIRED,
              ),
            ),
          },
        },
      },
      '/openapi/v1/audios': {
        post: {
          operationId: 'queryRecordings',
          tags: ['recordings'],
          summary: 'Query recordings',
          security: bearer,
          requestBody: jsonBody(ref('SealedRecordingFilter')),
          responses: {
            '200': answer('A page of recordings, sealed', ref('SealedRecordingList')),
            ...refusals(BEARER_CODES),
          },
        },
      },
      '/openapi/v1/audios/changes': {
        post: {
          operationId: 'readChanges',
          tags: ['changes'],
          summary: 'Read the change feed',
          security: bearer,
          requestBody: jsonBody(ref('SealedChangesRequest')),
          responses: {
            '200': answer('A page of changes, sealed', ref('SealedChangePage')),
            ...refusals(BEARER_CODES),
          },
        },
      },
      '/openapi/v1/callback': {
        post: {
          operationId: 'confirmReceipt',
          tags: ['recordings'],
          summary: 'Confirm the receipt of a pushed recording',
          description:
            'Confirms the deliveries of that audioId the partner has acknowledged. A repeated callback answers 2000 and changes nothing more. A deleted recording answers 2000 if the partner had it, else 4040.',
          security: bearer,
          requestBody: jsonBody(ref('SealedCallbackPlaintext')),
          responses: {
            '200': answer('Confirmed'),
            ...refusals([...BEARER_CODES, ResponseCode.NOT_FOUND].sort((a, b) => a - b)),
          },
        },
      },
      '/healthz': {
        get: {
          operationId: 'health',
          tags: ['health'],
          summary: 'Liveness',
          responses: {
            '200': jsonAnswer('The process serves requests', health('ok', 'alive')),
            ...refusals([ResponseCode.UNAVAILABLE]),
          },
        },
      },
      '/readyz': {
        get: {
          operationId: 'readiness',
          tags: ['health'],
          summary: 'Readiness: the database answers',
          responses: {
            '200': jsonAnswer('Ready', health('ready', 'ready')),
            '503': jsonAnswer('Shutting down (5030), or the database is unavailable', {
              anyOf: [
                ref('ErrorBody'),
                {
                  type: 'object',
                  required: ['status'],
                  properties: { status: { type: 'string', enum: ['shutting down', 'database unavailable'] } },
                },
              ],
            }),
          },
        },
      },
    },
    webhooks: {
      recordingEvent: {
        post: {
          operationId: 'pushRecordingEvent',
          summary: 'Push (platform → partner)',
          description:
            'The platform POSTs each event to the enterprise\'s push URL. Acknowledge it with HTTP 2xx and `{"code": 2000}` within EARSHOT_PUSH_TIMEOUT (10 s), dedup by eventId, then confirm it with the receipt callback. Anything else is a failed attempt, retried on the schedule 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m, 30m, 1h, 3h, 3h, 3h, 6h, 6h. An acknowledged push with no callback within 10 minutes is pushed again with the same eventId, at most 3 times.',
          parameters: [
            {
              name: 'X-Earshot-Event-Id',
              in: 'header',
              required: true,
              description: "the event's eventId, as in the sealed PushEvent",
              schema: { type: 'string' },
            },
          ],
          requestBody: jsonBody(ref('SealedPushEvent')),
          responses: {
            '200': jsonAnswer('Acknowledged (any 2xx status with code 2000)', {
              type: 'object',
              required: ['code'],
              properties: { code: { type: 'integer', const: ResponseCode.OK } },
            }),
            '410': { description: 'Gone: the push URL is disabled at once, until an operator enables it' },
            default: { description: 'Anything else: a failed attempt' },
          },
        },
      },
    },
    components: {
      schemas: components.schemas(),
      securitySchemes: {
        accessToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'An accessToken from POST /openapi/v1/token (valid expiresIn seconds, default 7200)',
        },
      },
    },
  }
}
